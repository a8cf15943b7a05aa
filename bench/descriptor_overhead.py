"""Full instrumentation with and without --instr-descriptors, side by side, on the overhead workloads.

    python bench/descriptor_overhead.py [--workloads mnist resnet18 transformer] [--rounds 3] [--iters 60]

The baseline is full instrumentation (`monkey-patch` of eval/perf_overhead), the candidate the same with
--instr-descriptors (also torch.Tensor's ~600 C methods: `monkey-patch-descriptors`); `naive` runs too,
so each can be read against no tool. Per round, the three run in lockstep (eval/perf_overhead/run.py:
each takes its i-th iteration right after the previous one's, on the same machine state), in rotated
order. The ratio of a round is the median of the per-iteration ratios after --warmup iterations; the
figure is the median over rounds. Wall time and the process's CPU time (writer thread included).
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from eval.perf_overhead import run as perf_run  # noqa: E402

BASELINE, CANDIDATE = "monkey-patch", perf_run.DESCRIPTOR_METHOD
METHODS = ["naive", BASELINE, CANDIDATE]


def median_ratio(numerator: list[float], denominator: list[float], warmup: int) -> float:
    n = min(len(numerator), len(denominator))
    return statistics.median(a / b for a, b in zip(numerator[warmup:n], denominator[warmup:n]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", nargs="+", default=["mnist", "resnet18", "transformer"])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--iters", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--time-limit", type=float, default=600.0, help="seconds per run")
    args = parser.parse_args()
    if perf_run.find_collector() is None:
        print("traincheck-collect is not installed beside this Python or on PATH", file=sys.stderr)
        return 2
    out = Path(tempfile.mkdtemp(prefix="tc_descriptors_"))
    for sub in ("raw", "logs", "runs"):
        (out / sub).mkdir()
    opts = perf_run.Options(workloads=args.workloads, methods=METHODS, iters=args.iters, repeats=args.rounds,
                            warmup=args.warmup, default_time_limit=args.time_limit, out=out)
    print(f"{'workload':12s} {'naive ms':>9s} {'full ms':>9s} {'+desc ms':>9s} {'full/naive':>11s} "
          f"{'+desc/naive':>12s} {'+desc/full':>11s} {'cpu +desc/full':>15s}", flush=True)
    for workload in args.workloads:
        ratios = {"full": [], "desc": [], "desc_full": [], "cpu_desc_full": []}
        ms = {m: [] for m in METHODS}
        for rnd in range(args.rounds):
            results = perf_run.run_lockstep(workload, perf_run.rotated(METHODS, rnd), rnd, opts)
            outcomes = {record.method: outcome for record, outcome in results}
            bad = [f"{r.method}: {r.status}" for r, _ in results if r.status != "ok"]
            if bad:
                print(f"{workload}: round {rnd + 1} failed ({', '.join(bad)}; logs in {out / 'logs'})", file=sys.stderr)
                return 1
            t = {m: outcomes[m].times for m in METHODS}
            for m in METHODS:
                ms[m].append(statistics.median(t[m][args.warmup:]) * 1e3)
            ratios["full"].append(median_ratio(t[BASELINE], t["naive"], args.warmup))
            ratios["desc"].append(median_ratio(t[CANDIDATE], t["naive"], args.warmup))
            ratios["desc_full"].append(median_ratio(t[CANDIDATE], t[BASELINE], args.warmup))
            cpu = {m: outcomes[m].cpu_times for m in (BASELINE, CANDIDATE)}
            if all(cpu.values()):
                ratios["cpu_desc_full"].append(median_ratio(cpu[CANDIDATE], cpu[BASELINE], args.warmup))
        med = {k: statistics.median(v) if v else float("nan") for k, v in ratios.items()}
        print(f"{workload:12s} {statistics.median(ms['naive']):9.2f} {statistics.median(ms[BASELINE]):9.2f} "
              f"{statistics.median(ms[CANDIDATE]):9.2f} {med['full']:11.3f} {med['desc']:12.3f} "
              f"{med['desc_full']:11.3f} {med['cpu_desc_full']:15.3f}   "
              f"(+desc/full per round: {', '.join(f'{r:.3f}' for r in ratios['desc_full'])})", flush=True)
    print(f"(median over {args.rounds} lockstep rounds of the median per-iteration ratio, {args.iters} iterations, "
          f"first {args.warmup} dropped; runs in {out})")
    shutil.rmtree(out / "runs", ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
