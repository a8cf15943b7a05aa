"""The `sys.settrace` baseline of the overhead evaluation: log every Python call and return, with arguments.

    python settrace_runner.py [--log FILE] [--max-repr N] SCRIPT [SCRIPT ARGS...]

Installs a trace function that writes one line per Python-level `call` (function name, file, line, and
the `repr` of every argument, truncated) and per `return` (the same, plus the return value), then runs
SCRIPT as `__main__` through `runpy`. This is the naive tracer the paper compares against (its
`main_settrace.py` variants). Two deliberate differences from those copies:

- the log file is opened once and buffered, where the paper's opened it for every event: ours is the
  cheaper, fairer baseline;
- `torch` and the modules the workloads import are imported *before* the tracer is installed, so that
  the (untimed) import is not traced; the paper's copies installed the tracer inside `train()`.
  Everything the script itself does, model construction included, is traced.

C functions (`torch.relu`, Tensor methods) are invisible to `sys.settrace`, as they were to the paper's
tracer. Line events are switched off per frame (`f_trace_lines = False`): only calls and returns are
logged. Threads started by the script are traced too (`threading.settrace`).
"""
from __future__ import annotations

import argparse
import importlib
import os
import runpy
import sys
import threading

# torch._dynamo is imported lazily by the first optimizer (torch._compile's disable wrapper): thousands of
# sympy calls that are library start-up, not training, so it is imported up front as well.
PREIMPORT = ("torch", "torch.nn", "torch.nn.functional", "torch.optim", "torch.optim.lr_scheduler",
             "torch.utils.data", "torch._dynamo")


def make_tracer(log, max_repr: int):
    """Return a trace function that writes call/return events with argument reprs to `log`."""

    def describe_args(frame) -> str:
        code = frame.f_code
        nargs = code.co_argcount + code.co_kwonlyargcount
        nargs += bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)  # *args, **kwargs
        local_vars = frame.f_locals
        parts = []
        for name in code.co_varnames[:nargs]:
            try:
                text = repr(local_vars[name])
            except Exception:  # unprintable, half-constructed (self in __init__) or deleted: say so
                text = "<unprintable>"
            parts.append(f"{name}={text[:max_repr]}")
        return ", ".join(parts)

    def tracer(frame, event, arg):
        if event == "call":
            frame.f_trace_lines = False
            code = frame.f_code
            log.write(f"call {code.co_name} {code.co_filename}:{frame.f_lineno} ({describe_args(frame)})\n")
            return tracer
        if event == "return":
            code = frame.f_code
            try:
                result = repr(arg)[:max_repr]
            except Exception:
                result = "<unprintable>"
            log.write(f"return {code.co_name} {code.co_filename}:{frame.f_lineno} "
                      f"({describe_args(frame)}) -> {result}\n")
        return tracer

    return tracer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--log", default="settrace_calls.log", help="trace log (default: %(default)s)")
    parser.add_argument("--max-repr", type=int, default=200, help="truncate each repr to N characters")
    parser.add_argument("--no-preimport", action="store_true", help="trace the imports of torch too")
    parser.add_argument("script")
    parser.add_argument("script_args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)

    if not args.no_preimport:
        for module in PREIMPORT:
            try:
                importlib.import_module(module)
            except ImportError:  # an older or trimmed torch: the script will import what it needs
                pass

    sys.argv = [args.script, *args.script_args]
    sys.path[0] = os.path.dirname(os.path.abspath(args.script))  # as `python SCRIPT` would have it
    with open(args.log, "w", buffering=1 << 20) as log:
        tracer = make_tracer(log, args.max_repr)
        threading.settrace(tracer)
        sys.settrace(tracer)
        try:
            runpy.run_path(args.script, run_name="__main__")
        finally:
            sys.settrace(None)
            threading.settrace(None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
