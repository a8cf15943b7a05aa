"""torch.compile under instrumentation (docs/collection.md §torch.compile).

Two things keep a compiled program's graphs, graph breaks and results what they are without the tool:

- Dynamo must trace the original wherever it meets a wrapper. A wrapper delegates `__class__`, `__code__`
  and `__closure__` to its original, so dynamo takes a wrapped Python function for a function; but its
  guards read `__closure__` through CPython's function struct, which a wrapper does not have ("Guard
  failed on the same frame it was created"). `_torchdynamo_inline` (the attribute torch.jit.script and
  torch.compile set on their own wrappers) makes dynamo trace and guard the original instead. Wrapped
  builtins need nothing: dynamo's tables of torch functions are filled from the module attributes, i.e.
  with the wrappers, and its own `fn is torch.is_complex` checks hold only while it sees the wrapper.
  Methods (binding wrappers) are left alone too: dynamo reads `obj.method._torchdynamo_inline` back
  unbound when a graph breaks inside the method, and `functools.wraps` (Optimizer's step hook) would copy
  the attribute onto torch's own wrapper, making dynamo skip the step hooks.
- Nothing is recorded while dynamo compiles: tracing runs thousands of torch's own functions (pytree,
  fake tensors) that are compiler work, not training. Dynamo's compile-start/end callbacks (run once
  for nested compiles: it counts them) switch the compiling thread's recording off and back on; they are registered when torch._dynamo is first imported (by the
  script's torch.compile), so a run that never compiles never imports it.
"""

from __future__ import annotations

import sys
import threading
import types

from traincheck import post_import

_DYNAMO_CALLBACKS = "torch._dynamo.callback"


def mark_traceable(wrapper, original, binds: bool) -> None:
    """Let dynamo trace `original` where it finds the non-binding `wrapper` of a Python function."""
    if not binds and type(original) is types.FunctionType:
        wrapper._torchdynamo_inline = original


def pause_recording_while_compiling(core) -> None:
    """Register the compile callbacks now if dynamo is loaded, else once its callback module is imported."""
    if _DYNAMO_CALLBACKS in sys.modules:
        _register(core, sys.modules[_DYNAMO_CALLBACKS])
    else:
        post_import.after_import(_DYNAMO_CALLBACKS, lambda module: _register(core, module))


def _register(core, callback_module) -> None:
    handler = getattr(callback_module, "callback_handler", None)
    if handler is None:  # another torch version: compile still works, its tracing is recorded too
        print(f"traincheck: warning: {_DYNAMO_CALLBACKS}.callback_handler not found; calls torch makes while "
              "compiling will be recorded", file=sys.stderr)
        return
    saved = threading.local()  # the compiling thread's flag before the compile

    def on_start(_args=None):
        saved.flag = core.set_inside_recorder(True)

    def on_end(_args=None):
        core.set_inside_recorder(getattr(saved, "flag", False))

    handler.register_start_callback(on_start)
    handler.register_end_callback(on_end)
