"""Cost per call of the recorder on the training thread, side by side in one process (docs/README.md §Budgets).

    python bench/record_call_cost.py [--calls 200000] [--rounds 9]

Variants, interleaved round by round: the plain function; the wrapper while recording is off (disabled);
the wrapper during a sampled-out step (recording off, rare calls still recorded: a per-step API pays the
rare-call test and its step count);
a recorded call without argument capture (pre + post events); a recorded call capturing two tensor
arguments and the tensor result. Reports the median over rounds of ns per call (CPU time of the calling
thread, so the writer thread's work on the other core is not counted) and the overhead over plain.
"""

import argparse
import statistics
import tempfile
import time

import torch

from traincheck import _core


def per_call_ns(fn, args, calls):
    start = time.thread_time_ns()
    for _ in range(calls):
        fn(*args)
    return (time.thread_time_ns() - start) / calls


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200000)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()

    _core.set_torch_types(torch.Tensor, torch.nn.Parameter, torch.dtype, torch.device, torch.nn.Module)
    out = tempfile.mkdtemp(prefix="tc_bench_")
    _core.start(out)
    a, b = torch.ones(4), torch.ones(4)
    _core.set_step(1)  # a per-step API in step 1 after one call is not rare: the sampled-out path records nothing
    per_step_api = _core.wrap(torch.is_grad_enabled, "torch.is_grad_enabled", binds=False)
    per_step_api()
    cases = {
        # name: (callable, args, recording: True, False (disabled) or "sampled out")
        "plain torch.is_grad_enabled()": (torch.is_grad_enabled, (), None),
        "wrapper, recording disabled": (_core.wrap(torch.is_grad_enabled, "torch.is_grad_enabled", binds=False), (), False),
        "sampled-out step, per-step API": (per_step_api, (), "sampled out"),
        "recorded, no arguments": (_core.wrap(torch.is_grad_enabled, "torch.is_grad_enabled", binds=False), (), True),
        "plain torch.add(a, b)": (torch.add, (a, b), None),
        "recorded, two tensor args + result": (
            _core.wrap(torch.add, "torch._VariableFunctionsClass.add", binds=False, dump_args=True, dump_return=True),
            (a, b),
            True,
        ),
    }
    samples = {name: [] for name in cases}
    for _ in range(args.rounds):
        for name, (fn, fargs, recording) in cases.items():
            _core.set_recording(recording is True, rare_calls=recording == "sampled out")
            samples[name].append(per_call_ns(fn, fargs, args.calls))
            _core.flush()  # keep the writer's backlog out of the next measurement
    _core.shutdown()
    med = {name: statistics.median(v) for name, v in samples.items()}
    base_noargs, base_add = med["plain torch.is_grad_enabled()"], med["plain torch.add(a, b)"]
    print(f"{'variant':40s} {'ns/call':>9s} {'overhead ns':>12s} {'ratio':>7s}   budget")
    rows = [
        ("plain torch.is_grad_enabled()", base_noargs, ""),
        ("wrapper, recording disabled", base_noargs, "< 20 ns"),
        ("sampled-out step, per-step API", base_noargs, "< 20 ns"),
        ("recorded, no arguments", base_noargs, "< 150 ns"),
        ("plain torch.add(a, b)", base_add, ""),
        ("recorded, two tensor args + result", base_add, ""),
    ]
    for name, base, budget in rows:
        print(f"{name:40s} {med[name]:9.1f} {med[name] - base:12.1f} {med[name] / base:7.2f}   {budget}")
    print(f"(median of {args.rounds} rounds x {args.calls} calls; thread CPU time; trace files in {out})")


if __name__ == "__main__":
    main()
