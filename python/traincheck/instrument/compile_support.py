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
- An nn.Module class's methods must be real functions in the class once dynamo runs: dynamo inlines
  `type(module).forward` from the class and guards its `__defaults__` and `__closure__` through CPython's
  function struct ("FuncDefaultsGuardAccessor" / "ClosureGuardAccessor: Not a function": torch's
  `MultiheadAttention.forward(..., key_padding_mask=None)`, a transformers attention `forward` under a
  decorator), and `_torchdynamo_inline` does not help there (the guard keeps the class attribute as its
  source). At the first compile (and at each later one, for classes imported since), a module method's
  binding wrapper is replaced in its class by a shim: a real function without defaults that calls a
  non-binding wrapper of the original, which dynamo traces through `_torchdynamo_inline` like any wrapped
  function. A run that never compiles keeps the binding wrappers and pays nothing; after the swap, each
  such call costs one Python frame more.
- Nothing is recorded while dynamo compiles: tracing runs thousands of torch's own functions (pytree,
  fake tensors) that are compiler work, not training. Dynamo's compile-start/end callbacks (run once
  for nested compiles: it counts them) switch the compiling thread's recording off and back on; they are registered when torch._dynamo is first imported (by the
  script's torch.compile), so a run that never compiles never imports it.
"""

from __future__ import annotations

import inspect
import sys
import threading
import types
from dataclasses import dataclass

from traincheck import post_import

_DYNAMO_CALLBACKS = "torch._dynamo.callback"


def mark_traceable(wrapper, original, binds: bool) -> None:
    """Let dynamo trace `original` where it finds the non-binding `wrapper` of a Python function."""
    if not binds and type(original) is types.FunctionType:
        wrapper._torchdynamo_inline = original


@dataclass(frozen=True)
class PendingShim:
    """A method whose class gets a function shim at the next compile: the binding wrapper installed there,
    the function it wraps and how it was wrapped (`_core.wrap`'s options but `binds`)."""
    owner: type
    attr: str
    wrapper: object
    wrapped: types.FunctionType
    api_name: str
    wrap_options: dict


def needs_function_shim(owner, original, binds: bool) -> bool:
    """A binding wrapper of an nn.Module class's Python method: dynamo inlines it from the class."""
    if not binds or type(original) is not types.FunctionType:
        return False
    nn_module = sys.modules.get("torch.nn.modules.module")
    return nn_module is not None and isinstance(owner, type) and issubclass(owner, nn_module.Module)


def function_shim(target, original: types.FunctionType) -> types.FunctionType:
    """A real function, without defaults of its own, that calls `target`; it reads as `original` to
    `inspect.signature` and to help() (transformers' Trainer inspects `forward`'s parameters)."""
    def shim(*args, **kwargs):
        return target(*args, **kwargs)

    for attr in ("__module__", "__name__", "__qualname__", "__doc__"):
        setattr(shim, attr, getattr(original, attr))
    shim.__signature__ = inspect.signature(original)
    return shim


def swap_in_shims(core, report) -> int:
    """Replaces the pending binding wrappers by function shims (where the class still holds ours)."""
    pending, report.pending_shims = report.pending_shims, []
    swapped = 0
    for p in pending:
        if vars(p.owner).get(p.attr) is not p.wrapper:
            continue  # the user or a library replaced it since: leave theirs alone
        inner = core.wrap(p.wrapped, p.api_name, binds=False, **p.wrap_options)
        inner._torchdynamo_inline = p.wrapped
        setattr(p.owner, p.attr, function_shim(inner, p.wrapped))
        report._undo.append((p.owner, p.attr, p.wrapper, True))
        swapped += 1
    return swapped


def pause_recording_while_compiling(core, report=None) -> None:
    """Register the compile callbacks now if dynamo is loaded, else once its callback module is imported.
    With `report` (the InstallReport), each compile first swaps in its pending function shims."""
    if _DYNAMO_CALLBACKS in sys.modules:
        _register(core, sys.modules[_DYNAMO_CALLBACKS], report)
    else:
        post_import.after_import(_DYNAMO_CALLBACKS, lambda module: _register(core, module, report))


def _register(core, callback_module, report=None) -> None:
    handler = getattr(callback_module, "callback_handler", None)
    if handler is None:  # another torch version: compile still works, its tracing is recorded too
        print(f"traincheck: warning: {_DYNAMO_CALLBACKS}.callback_handler not found; calls torch makes while "
              "compiling will be recorded", file=sys.stderr)
        return
    saved = threading.local()  # the compiling thread's flag before the compile

    def on_start(_args=None):
        saved.flag = core.set_inside_recorder(True)
        if report is not None and report.pending_shims:
            swap_in_shims(core, report)

    def on_end(_args=None):
        core.set_inside_recorder(getattr(saved, "flag", False))

    handler.register_start_callback(on_start)
    handler.register_end_callback(on_end)
