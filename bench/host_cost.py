"""The tool's added host time on the training thread per step, in microseconds, per mode and workload.

    python bench/host_cost.py [--blocks 7] [--iters 10] [--pairs 30] [--paper-size] [--device cuda] [--json FILE]
        [--workloads mnist resnet18 transformer p1000 p10000 p50000] [--modes annotate full selective ...]

What a GPU pays for the tool is host time: there the training thread only launches kernels, and a step of
the paper's workloads takes 3-25 ms on an H200 (docs/README.md §Budgets). On a CPU build the training
thread's time is mostly the kernels themselves, so a few hundred microseconds added by the tool drown in
the noise of a 50-500 ms CPU step. Method:

- Identical work without the kernels: each Figure 7 model is built with its paper structure (the same
  layers, parameter tensors, optimizer and loop, so the same torch calls per step, which is what the
  wrappers, the records and the tracker's per-parameter work scale with) but at the smallest widths and
  inputs, so that a step is a few milliseconds of mostly host work. `--paper-size` runs the paper's
  widths and inputs instead (kernel time included: slow and noisy here, meant for a quiet or GPU-less
  check of the same figures).
- Modes that wrap APIs (full, selective, selective+check) are installed for a block in which every other
  step is sampled out (the same step, the wrappers only passing the calls through): their recording
  cost is the median, over every pair of adjacent steps of every block, of the recorded step minus the
  sampled-out one: a step apart, the machine's drift and other processes' load cancel out far better
  than between blocks.
  To it is added what the wrappers cost when they record nothing: the wrapped calls per recorded step
  (the recorder's events, two per call) times the pass-through cost of a wrapper on a sampled-out step,
  measured at the start (as bench/record_call_cost.py). `--blocks` rounds, round-robin over the modes,
  each block after a plain block (nothing installed) that gives the plain step time. Times are the training thread's CPU time (`time.thread_time`): what other processes and the
  writer thread do is not counted.
- The tracking mode does work on sampled-out steps too (its optimizer hook), so it is measured against
  the plain block just before it: every step recorded, the median step of its block minus the plain
  block's, median over rounds (a coarser figure: its cost is milliseconds).
- The tracker's digests run on the CPU here, so their kernels count as host time; on a GPU they are
  device kernels, and the host pays their launches and one asynchronous copy per write. At the
  smallest widths the digests' kernel time is small, but the number of digest ops per write is that of
  small tensors (batched), not of the paper's (large tensors take one op chain per 2^18 elements).
- The writer thread (trace formatting, the in-process check) runs beside training: reported apart as
  the process's CPU time outside the training thread per step over the block, writer queue flushed
  before the block's clock stops, the mode's minus the plain block's.

Modes, as eval/perf_overhead's Figure 7 sets them up (collect's defaults), each with the step annotation:
  annotate          the step annotation alone, measured as the wrapping modes are: what it adds is
                    almost nothing, so its row shows the method's noise on this machine;
  full              every torch API wrapped, arguments and results summarised, every step recorded;
  selective         the 100 deployed invariants' APIs (eval/perf_overhead/invariants/deployed_100.json),
                    every step recorded (sampling 1/1, the most a step can cost);
  selective+check   the same with the in-process check of those invariants (writer thread);
  tracking          --models-to-track model, sampler style: the tracker's writes after each optimizer step
                    (with the claims) and at each step end, no API wrapped.

With `--device cuda` the models and their data live on the GPU, and each step is waited for after its
clock stops (so a full launch queue never blocks inside one): the figures are then measured host time, not
a projection; the digests' kernels run on the device.

Workloads: the Figure 7 workloads with the paper's structure (eval/perf_overhead/workloads: MNIST CNN,
Adadelta; ResNet-18, SGD with momentum; word-level Transformer LM, clipping and a manual update; widths
and inputs as above), and synthetic models of 1k/10k/50k parameter tensors (4 elements each, every one with a gradient
zeroed, recomputed in place and applied each step by foreach calls, SGD; from 10k tensors on, fewer rounds,
steps and pairs). Each paper figure is printed with its share of the paper's H200 step (MNIST 3.0 ms, ResNet-18
24.2 ms, Transformer 5.2 ms); each synthetic figure with microseconds per parameter tensor.
"""

from __future__ import annotations

import argparse
import json
import os
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
sys.path.insert(0, str(Path(__file__).resolve().parent))
from selective_inprocess import classifier_step, start_online_check  # noqa: E402

H200_STEP_MS = {"mnist": 3.0, "resnet18": 24.2, "transformer": 5.2}
DEVICE = torch.device("cpu")  # --device


def on_device(*objects):
    return [o.to(DEVICE) for o in objects]


def wait_for_device():
    """Outside a step's clock: the device's queue emptied, so that the next step's launches never wait."""
    if DEVICE.type == "cuda":
        torch.cuda.synchronize()
MODES = ("annotate", "full", "selective", "selective+check", "tracking")


# -- workloads: (model, step function) --------------------------------------------------------------------
# `paper`: the paper's model widths, batches and inputs. Else the same models at the smallest widths and
# inputs (MNIST 2/4 channels, batch 1; ResNet-18 4-32 channels, 32x32, batch 2; Transformer 8 wide, 100
# words, 2 tokens): the same layers, parameter tensors and torch calls per step, so the same work for the
# tool, with almost no kernel time. Optimizers keep the CPU's default, a loop over the parameters: more
# calls than the foreach path a GPU takes (an upper bound for full mode), and the path the deployed
# invariants were learned on (foreach=True skips a call they expect).
def mnist(paper):
    from mnist.main import Net

    model, = on_device(Net(1.0 if paper else 1 / 16))
    optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)
    batch = 64 if paper else 1
    x, y = on_device(torch.randn(batch, 1, 28, 28), torch.randint(0, 10, (batch,)))
    return model, classifier_step(model, optimizer, F.nll_loss, x, y)


def resnet18(paper):
    from resnet18.main import resnet18 as make

    batch, size, width, classes = (256, 224, 1.0, 1000) if paper else (2, 32, 1 / 16, 10)  # 2: batch norm's least
    model, = on_device(make(classes, width))
    optimizer = torch.optim.SGD(model.parameters(), 0.1, momentum=0.9, weight_decay=1e-4)
    x, y = on_device(torch.randn(batch, 3, size, size), torch.randint(0, classes, (batch,)))
    return model, classifier_step(model, optimizer, F.cross_entropy, x, y)


def transformer(paper):
    from transformer.main import TransformerModel

    words, width, batch, bptt = (33278, 200, 20, 35) if paper else (100, 8, 1, 2)
    model, = on_device(TransformerModel(words, width, 2, width, 2, 0.2))
    data, targets = on_device(torch.randint(0, words, (bptt, batch)), torch.randint(0, words, (bptt * batch,)))
    criterion = nn.NLLLoss()

    def step():  # the workload's loop: no optimizer, a manual update
        model.zero_grad()
        criterion(model(data).view(-1, words), targets).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-20.0)

    return model, step


def synthetic(n):
    def make(paper):
        model = nn.ParameterList([nn.Parameter(torch.zeros(4, device=DEVICE)) for _ in range(n)])
        for p in model:
            p.grad = torch.zeros(4, device=DEVICE)
        grads = [p.grad for p in model]
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01, foreach=True)

        def step():  # every gradient zeroed, computed (in place) and applied: a few foreach calls
            optimizer.zero_grad(set_to_none=False)
            torch._foreach_add_(grads, 1.0)
            optimizer.step()

        return model, step

    return make


WORKLOADS = {"mnist": mnist, "resnet18": resnet18, "transformer": transformer,
             "p1000": synthetic(1000), "p10000": synthetic(10000), "p50000": synthetic(50000)}


# -- modes ---------------------------------------------------------------------------------------------------
class Mode:
    """Installs one of the tool's modes around a block, as traincheck-collect would for the whole run."""

    def __init__(self, name, tool, model):
        self.name, self.tool, self.model = name, tool, model
        self.report = self.tracker = self.hook = None

    def enter(self):
        t = self.tool
        if self.name in ("full", "selective", "selective+check"):
            self.report = t.install(t.full_targets if self.name == "full" else t.plan_targets,
                                    t.full_options if self.name == "full" else t.plan.options_for)
        if self.name == "selective+check":
            t.core.set_record_sink(t.check_sink)
        if self.name == "tracking":
            from torch.optim.optimizer import register_optimizer_step_post_hook

            from traincheck.tracking.tracker import ModelTracker

            previous = t.core.set_inside_recorder(True)
            self.tracker = ModelTracker(t.core, "sampler")
            self.tracker.track(self.model, "model")
            self.hook = register_optimizer_step_post_hook(self.tracker.after_optimizer_step)
            t.meta_vars.add_step_end_hook(self.tracker.at_step_end)
            t.core.set_inside_recorder(previous)

    def exit(self):
        t = self.tool
        if self.report is not None:
            self.report.uninstall()
            self.report = None
        if self.tracker is not None:
            self.tracker.at_exit()
            self.hook.remove()
            t.meta_vars._step_end_hooks.remove(self.tracker.at_step_end)
            self.tracker = None
        t.core.set_recording(False)

    def flush(self):
        """The block's records written (and checked): the writer's work for the block, before its clock stops."""
        self.tool.core.flush()
        if self.name == "selective+check":
            self.tool.core.clear_record_sink()


class Tool:
    """The recorder, the targets and plans, made once for the whole run."""

    def __init__(self, invariants, out):
        from traincheck import _core, meta_vars
        from traincheck.instrument import selective
        from traincheck.instrument.installer import CallOptions, install
        from traincheck.instrument.walker import find_targets

        _core.set_torch_types(torch.Tensor, torch.nn.Parameter, torch.dtype, torch.device, torch.nn.Module)
        _core.start(out)
        meta_vars.attach_recorder(_core, 1, 1)
        _core.set_recording(False)
        self.core, self.meta_vars, self.install = _core, meta_vars, install
        self.plan = selective.build_plan([invariants])
        self.full_targets = find_targets(["torch"], True, _core.is_wrapper)
        self.plan_targets = find_targets(["torch"], False, _core.is_wrapper, instr_descriptors=True)
        full = CallOptions(dump_args=True, dump_return=True)
        self.full_options = lambda name: full
        self.check_sink = start_online_check(invariants, self.plan, out)
        self.pass_through_s = self._pass_through_s()

    def _pass_through_s(self, calls=200000, rounds=5):
        """Seconds a wrapped per-step API adds to its call on a sampled-out step (record_call_cost.py)."""
        wrapped = self.core.wrap(torch.is_grad_enabled, "torch.is_grad_enabled", binds=False)
        self.core.set_step(1)
        wrapped()  # called in step 1: a per-step API, not a rare one, on the sampled-out path
        rows = []
        for _ in range(rounds):
            self.core.set_recording(False, rare_calls=True)
            times = []
            for fn in (torch.is_grad_enabled, wrapped):
                t0 = time.thread_time()
                for _ in range(calls):
                    fn()
                times.append(time.thread_time() - t0)
            rows.append((times[1] - times[0]) / calls)
        self.core.set_recording(False)
        return statistics.median(rows)


# -- measurement ---------------------------------------------------------------------------------------------
def run_block(step, iters, mode, meta_vars):
    """(median training-thread seconds per step, other threads' CPU seconds per step) over `iters` steps, with
    `mode` installed (every step recorded) or nothing (plain)."""
    if mode is not None:
        mode.enter()
    try:
        for _ in range(BLOCK_WARMUP):
            if mode is not None:
                meta_vars.start_step()
            step()
        wait_for_device()
        thread, process0, thread0 = [], time.process_time(), time.thread_time()
        for _ in range(iters):
            t0 = time.thread_time()
            if mode is not None:
                meta_vars.start_step()  # the step boundary's hooks (the tracker's write at a step end) count
            step()
            thread.append(time.thread_time() - t0)
            wait_for_device()
        if mode is not None:
            mode.flush()
        others = (time.process_time() - process0) - (time.thread_time() - thread0)
    finally:
        if mode is not None:
            mode.exit()
    return statistics.median(thread), others / iters


def run_alternating(step, pairs, mode, tool):
    """A wrapping mode with every other step sampled out: per pair of adjacent steps, recorded minus sampled
    out (seconds); wrapped calls per recorded step; other threads' CPU seconds per recorded step."""
    policy = dict(tool.meta_vars._policy)
    mode.enter()
    tool.meta_vars._policy.update(interval=2, warm_up=0)
    try:
        for _ in range(BLOCK_WARMUP + 1):
            tool.meta_vars.start_step()
            step()
        tool.core.flush()
        events0, process0, thread0 = tool.core.stats()["events_written"], time.process_time(), time.thread_time()
        times = {True: [], False: []}
        for _ in range(2 * pairs):
            t0 = time.thread_time()
            tool.meta_vars.start_step()
            recorded = tool.core.is_recording()
            step()
            times[recorded].append(time.thread_time() - t0)
            wait_for_device()
        mode.flush()
        others = (time.process_time() - process0) - (time.thread_time() - thread0)
        calls = (tool.core.stats()["events_written"] - events0) / 2 / len(times[True])  # a pre and a post event each
    finally:
        tool.meta_vars._policy.update(policy)
        mode.exit()
    return [r - o for r, o in zip(times[True], times[False])], calls, others / len(times[True])


BLOCK_WARMUP = 2  # untimed steps first: installing or removing wrappers de-specialises bytecode


def measure(name, make, args, tool):
    """Rows (workload, mode, plain ms, added us, writer us, wrapped calls per step) for one workload."""
    model, step = make(args.paper_size)
    for _ in range(3):
        step()
    modes = [Mode(m, tool, model) for m in args.modes]
    size = int(name[1:]) if name.startswith("p") else 0
    blocks, iters, pairs = (args.blocks, args.iters, args.pairs) if size < 10000 else (
        max(3, args.blocks // 2), max(3, args.iters // 2), max(5, args.pairs // (4 if size == 10000 else 8)))
    added = {m.name: ([], [], []) for m in modes}
    plain = []
    for b in range(blocks):
        for mode in modes[b % len(modes):] + modes[: b % len(modes)]:
            base = run_block(step, iters, None, tool.meta_vars)
            plain.append(base[0])
            if mode.name == "tracking":  # its hooks work on sampled-out steps too: against plain blocks
                cand = run_block(step, iters, mode, tool.meta_vars)
                added[mode.name][0].append(cand[0] - base[0])
                added[mode.name][1].append(cand[1] - base[1])
                continue
            differences, calls, others = run_alternating(step, pairs, mode, tool)
            added[mode.name][0].extend(d + calls * tool.pass_through_s for d in differences)
            added[mode.name][1].append(others - base[1])
            added[mode.name][2].append(calls)
    return [(name, m.name, statistics.median(plain) * 1e3, statistics.median(added[m.name][0]) * 1e6,
             statistics.median(added[m.name][1]) * 1e6,
             statistics.median(added[m.name][2]) if added[m.name][2] else None) for m in modes]


def share(name, us):
    if name in H200_STEP_MS:
        return f"{us / (H200_STEP_MS[name] * 1e3) * 100:6.2f}% of {H200_STEP_MS[name]} ms"
    return f"{us / int(name[1:]):7.3f} us/tensor"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blocks", type=int, default=7, help="rounds of (plain, mode) block pairs per mode")
    parser.add_argument("--iters", type=int, default=10, help="timed steps per tracking or plain block")
    parser.add_argument("--pairs", type=int, default=30,
                        help="pairs of steps (recorded, sampled out) per block of a wrapping mode")
    parser.add_argument("--workloads", nargs="+", default=[w for w in WORKLOADS if w != "p50000"],
                        choices=list(WORKLOADS), help="p50000 (about 4 minutes more) only when named")
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    parser.add_argument("--paper-size", action="store_true",
                        help="the paper's widths and inputs (kernel time included: slow and noisy on a CPU)")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                        help="where the models train (cuda: measured host time on a GPU, not a projection)")
    parser.add_argument("--invariants", default=str(DEPLOYED))
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args()

    global DEVICE
    DEVICE = torch.device(args.device)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    out = tempfile.mkdtemp(prefix="tc_host_cost_")
    tool = Tool(args.invariants, out)
    print(f"{len(tool.plan.funcs)} APIs in the selective plan; {args.blocks} rounds: {args.pairs} step pairs per "
          f"wrapping mode's block, {args.iters} steps per tracking or plain block (fewer from 10k tensors); "
          f"{'paper' if args.paper_size else 'smallest'} widths and inputs on {DEVICE}; a wrapper passes a sampled-out call "
          f"through in {tool.pass_through_s * 1e9:.0f} ns; trace in {out}")
    print(f"{'workload':<12} {'mode':<16} {'plain step':>11} {'with the tool':>14} {'ratio':>6} {'added':>11} "
          f"{'share / per tensor':>24} {'writer thread':>14} {'calls':>6}")
    rows = []
    for name in args.workloads:
        for row in measure(name, WORKLOADS[name], args, tool):
            rows.append(row)
            w, m, base_ms, us, writer_us, calls = row
            with_ms = base_ms + us / 1e3
            print(f"{w:<12} {m:<16} {base_ms:>8.2f} ms {with_ms:>11.2f} ms {with_ms / base_ms:>6.3f} {us:>8.1f} us "
                  f"{share(w, us):>24} {writer_us:>11.1f} us {'' if calls is None else f'{calls:.0f}':>6}", flush=True)
    tool.core.shutdown()
    if args.json:
        keys = ("workload", "mode", "plain_ms", "added_us", "writer_us", "wrapped_calls_per_step")
        Path(args.json).write_text(json.dumps([dict(zip(keys, r)) for r in rows], indent=1))


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
