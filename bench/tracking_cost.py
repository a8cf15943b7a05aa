"""Cost of model-state tracking, measured side by side.

    python bench/tracking_cost.py [--rounds 3] [--iters 60]

1. Per-iteration overhead of tracking (sampler style) on the CPU MLP and CNN workloads: the same
   traincheck-collect run with and without `--models-to-track model`, alternated; ratio of median
   iteration times, median over rounds.
2. Cost of one parameter digest against a full host copy of the same tensor (what the original pays
   before hashing), and against the original's algorithm (host copy, int64 scaling, a numpy pass per
   column), for a few sizes. On a GPU the digest also saves the device-to-host transfer; here both are
   on the CPU, so the copy is a memcpy and the comparison is the least favourable one for the digest.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from traincheck.tracking.digest import Digester

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "tests" / "python" / "scripts"
ENV = {"OMP_NUM_THREADS": "1", "GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296"}


def run_workload(script, extra, tracked, work, iters):
    times = work / f"t_{script.stem}_{tracked}.txt"
    cmd = [sys.executable, "-m", "traincheck.collect_trace", "-p", str(script), "--output-dir", str(work / f"o_{tracked}"), "--overwrite",
           "--sampling-interval", "1", "--warm-up-steps", "1", "-i", str(work / "inv.json")]
    if tracked:
        cmd += ["--models-to-track", "model", "--model-tracker-style", "sampler"]
    cmd += ["--", "--iters", str(iters), "--times", str(times), *extra]
    subprocess.run(cmd, check=True, capture_output=True, env={**os.environ, **ENV}, cwd=work)
    return statistics.median([float(x) for x in times.read_text().split()][5:])


def workload_overhead(rounds, iters):
    work = Path(tempfile.mkdtemp(prefix="tc_trackbench_"))
    # A minimal deployed set so both runs are the same selective collect; tracking is the only difference.
    (work / "inv.json").write_text(
        '{"text_description":"x","relation":"APIContainRelation","params":[{"param_type":"APIParam",'
        '"api_full_name":"torch.optim.optimizer.Optimizer.zero_grad"},{"param_type":"APIParam",'
        '"api_full_name":"torch.optim.optimizer.Optimizer._optimizer_step_code"}],"precondition":'
        '{"parent_func_call_pre":{"inverted":false,"preconditions":[{"clauses":"Unconditional"}]}},'
        '"num_positive_examples":2,"num_negative_examples":0}\n'
    )
    print(f"{'workload':10s} {'untracked ms':>13s} {'tracked ms':>11s} {'ratio':>7s}")
    for script, extra in [(SCRIPTS / "mlp_adam.py", ["--width", "256"]), (SCRIPTS / "cnn_sgd.py", [])]:
        ratios, base, tracked_ms = [], [], []
        for r in range(rounds):
            order = [False, True] if r % 2 == 0 else [True, False]
            med = {t: run_workload(script, extra, t, work, iters) for t in order}
            ratios.append(med[True] / med[False])
            base.append(med[False] * 1e3)
            tracked_ms.append(med[True] * 1e3)
        print(f"{script.stem:10s} {statistics.median(base):13.3f} {statistics.median(tracked_ms):11.3f} {statistics.median(ratios):7.3f}")


def original_hash(t: torch.Tensor) -> int:
    """The original's algorithm (docs/collection.md §Tensor digests): host copy, int64 scaling, one numpy
    pass per column."""
    x = (t * 1e8).to(torch.int64) if t.is_floating_point() else t.to(torch.int64)
    x = x.reshape(-1, x.shape[-1]) if x.dim() > 1 else x.reshape(1, -1)
    arr = x.cpu().numpy().astype(np.int64)
    h = np.zeros(arr.shape[0], dtype=np.int64)
    with np.errstate(over="ignore"):
        for c in range(arr.shape[1]):
            h = h * np.int64(6364136223846793005) + arr[:, c] + np.int64(1)
    return int(h[0])


def best_of(fn, repeats=7):
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def digest_vs_copy():
    d = Digester()
    print(f"\n{'numel':>10s} {'digest us':>10s} {'host copy us':>13s} {'digest/copy':>12s} {'original hash us':>17s} {'original/digest':>16s}")
    for numel, shape in [(1024, (32, 32)), (65536, (256, 256)), (1048576, (1024, 1024)), (4194304, (2048, 2048))]:
        t = torch.randn(*shape)
        d.digests([t])  # weights cache warm
        digest = best_of(lambda: d.digests([t]))
        copy = best_of(lambda: t.detach().cpu().numpy().copy())
        orig = best_of(lambda: original_hash(t), repeats=3)
        print(f"{numel:10d} {digest * 1e6:10.1f} {copy * 1e6:13.1f} {digest / copy:12.2f} {orig * 1e6:17.1f} {orig / digest:16.1f}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--iters", type=int, default=60)
    parser.add_argument("--skip-workloads", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if not args.skip_workloads:
        workload_overhead(args.rounds, args.iters)
    digest_vs_copy()


if __name__ == "__main__":
    main()
