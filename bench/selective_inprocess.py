"""Selective instrumentation's per-iteration cost, measured inside one process.

    python bench/selective_inprocess.py [--blocks 30] [--iters 10] [--workloads mlp_adam mnist transformer resnet18]

Why in one process: separate processes of the same script differ by several percent in per-iteration time
on these machines (memory layout, which core, neighbours), more than the 2% budget we must resolve, and a
core's speed drifts by +-15% over seconds. Here one process alternates many short blocks of iterations
(the drift is slow next to a block): `plain` (nothing installed), then the tool's state under
test, installed before its block and removed after it, in rotating order. Every block runs the same
model, optimizer and batch. A block's figure is the median per-iteration time of the training thread
(thread CPU time) and, as a second view, the wall time and the whole process's CPU time (recorder writer
thread included) over the block; a ratio is a block's figure over the plain block next to it, and the
reported figure is the median over blocks.

States:
  - annotate: only the step annotation (meta-var publication and the sampling switch), no wrappers;
  - sel_1/1: the 100 deployed invariants' wrappers (eval/perf_overhead/invariants/deployed_100.json),
    every step recorded;
  - sel_10/10: the same with selective mode's default sampling (warm-up 10, then every 10th step),
    what `traincheck-collect -i` does by default;
  - sel_1/1+check, sel_10/10+check: the same with the in-process online check of those invariants
    (traincheck._online fed by the recorder's writer thread), as `traincheck-collect -i` runs by default.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parent.parent
DEPLOYED = ROOT / "eval" / "perf_overhead" / "invariants" / "deployed_100.json"
sys.path.insert(0, str(ROOT / "eval" / "perf_overhead" / "workloads"))


def classifier_step(model, optimizer, loss_fn, x, y):
    def step():
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()

    return step


def mlp_adam():
    model = nn.Sequential(nn.Linear(16, 256), nn.ReLU(), nn.Linear(256, 4))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    return classifier_step(model, optimizer, F.cross_entropy, torch.randn(8, 16), torch.randint(0, 4, (8,)))


def mnist():
    from mnist.main import Net  # the evaluation's workload model (CPU width)

    model = Net(0.25)
    optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)
    return classifier_step(model, optimizer, F.nll_loss, torch.randn(64, 1, 28, 28), torch.randint(0, 10, (64,)))


def transformer():
    from transformer.main import TransformerModel

    model = TransformerModel(1000, 200, 2, 200, 2, 0.2)
    data = torch.randint(0, 1000, (35, 10))
    targets = torch.randint(0, 1000, (35 * 10,))
    criterion = nn.NLLLoss()

    def step():
        model.zero_grad()
        loss = criterion(model(data).view(-1, 1000), targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-20.0)

    return step


def resnet18():
    from resnet18.main import resnet18 as make_resnet18  # the evaluation's workload model (CPU defaults)

    model = make_resnet18(1000, 0.25)
    optimizer = torch.optim.SGD(model.parameters(), 0.1, momentum=0.9, weight_decay=1e-4)
    return classifier_step(model, optimizer, F.cross_entropy, torch.randn(16, 3, 32, 32), torch.randint(0, 1000, (16,)))


WORKLOADS = {"mlp_adam": mlp_adam, "mnist": mnist, "transformer": transformer, "resnet18": resnet18}


class ToolState:
    """One way of running the training step: installs its part of the tool around a block."""

    def __init__(self, name, core, meta_vars, plan=None, sampling=(1, 1), check_sink=None):
        self.name, self.core, self.meta_vars, self.plan = name, core, meta_vars, plan
        self.sampling, self.check_sink = sampling, check_sink
        self.report = None

    def enter(self):
        from traincheck.instrument.installer import install
        from traincheck.instrument.walker import find_targets

        self.meta_vars._policy.update(interval=self.sampling[0], warm_up=self.sampling[1])
        if self.plan is not None:
            self.report = install(find_targets(["torch"], False, self.core.is_wrapper), self.plan.options_for)
        if self.check_sink is not None:
            self.core.set_record_sink(self.check_sink)

    def exit(self):
        if self.report is not None:
            self.report.uninstall()
            self.report = None
        if self.check_sink is not None:
            self.core.flush()  # the block's records are checked by the writer thread: part of its cost
            self.core.clear_record_sink()
        self.core.set_recording(False)

BLOCK_WARMUP = 5  # untimed iterations first: installing or removing wrappers de-specialises bytecode


def run_block(step, iters, annotate, meta_vars):
    for _ in range(BLOCK_WARMUP):
        if annotate:
            meta_vars.start_step()
        step()
    thread_times = []
    wall0, cpu0 = time.perf_counter(), time.process_time()
    for _ in range(iters):
        if annotate:
            meta_vars.start_step()
        t0 = time.thread_time()
        step()
        thread_times.append(time.thread_time() - t0)
    return statistics.median(thread_times), time.perf_counter() - wall0, time.process_time() - cpu0


def start_online_check(invariants, plan, out_dir):
    """The in-process checker of the deployed invariants, as the collect runtime starts it."""
    from traincheck import _online
    from traincheck.instrument.installer import install
    from traincheck.instrument.signatures import signature_entry
    from traincheck.instrument.walker import find_targets
    from traincheck import _core

    report = install(find_targets(["torch"], False, _core.is_wrapper), plan.options_for)
    signatures = {}
    for name, wrapper in report.wrappers.items():
        entry = signature_entry(_core.unwrap(wrapper), drop_first=name in report.classmethods)
        if entry is not None:
            signatures[name] = entry
    report.uninstall()
    return _online.start([invariants], json.dumps(signatures), str(Path(out_dir) / "online_check"), 10.0)


def measure(name, make_step, blocks, iters, states, meta_vars):
    step = make_step()
    for _ in range(20):  # allocator and autograd warm-up, outside every block
        step()
    others = [s for s in states if s.name != "plain"]
    ratios = {s.name: ([], [], []) for s in others}
    for b in range(blocks):
        order = others[b % len(others):] + others[: b % len(others)]
        for state in order:
            base = run_block(step, iters, False, meta_vars)
            state.enter()
            try:
                cand = run_block(step, iters, True, meta_vars)
            finally:
                state.exit()
            for k in range(3):
                ratios[state.name][k].append(cand[k] / base[k])
    base_ms = run_block(step, iters, False, meta_vars)[0] * 1e3
    print(f"\n{name}: plain {base_ms:.3f} ms/iteration (training thread), {blocks} blocks x {iters} iterations")
    print(f"  {'state':<18} {'thread (median)':>16} {'wall (block)':>14} {'process CPU':>12}")
    for state in others:
        th, wall, cpu = (statistics.median(r) for r in ratios[state.name])
        print(f"  {state.name:<18} {th:>15.3f}x {wall:>13.3f}x {cpu:>11.3f}x")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blocks", type=int, default=30)
    parser.add_argument("--iters", type=int, default=10, help="timed iterations per block")
    parser.add_argument("--workloads", nargs="+", default=list(WORKLOADS), choices=list(WORKLOADS))
    parser.add_argument("--invariants", default=str(DEPLOYED))
    args = parser.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(0)
    from traincheck import _core, meta_vars
    from traincheck.instrument import selective

    out = tempfile.mkdtemp(prefix="tc_inproc_")
    _core.set_torch_types(torch.Tensor, torch.nn.Parameter, torch.dtype, torch.device, torch.nn.Module)
    _core.start(out)
    meta_vars.attach_recorder(_core, 1, 1)
    _core.set_recording(False)
    plan = selective.build_plan([args.invariants])
    states = [
        ToolState("plain", _core, meta_vars),  # the baseline every other block is divided by
        ToolState("annotate", _core, meta_vars),
        ToolState("sel_1/1", _core, meta_vars, plan, (1, 1)),
        ToolState("sel_10/10", _core, meta_vars, plan, (10, 10)),
    ]
    check_sink = start_online_check(args.invariants, plan, out)
    states += [
        ToolState("sel_1/1+check", _core, meta_vars, plan, (1, 1), check_sink),
        ToolState("sel_10/10+check", _core, meta_vars, plan, (10, 10), check_sink),
    ]
    print(f"deployed invariants: {args.invariants}; {len(plan.funcs)} APIs; trace in {out}")
    for name in args.workloads:
        measure(name, WORKLOADS[name], args.blocks, args.iters, states, meta_vars)
    _core.shutdown()
    from traincheck import _online

    print(f"\nonline check: {_online.counts()}")


if __name__ == "__main__":
    main()
