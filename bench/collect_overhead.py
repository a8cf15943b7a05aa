"""Per-iteration overhead of traincheck-collect (full and selective) against the plain script.

    python bench/collect_overhead.py [--rounds 3] [--iters 60]

Workloads: the MLP+Adam and CNN+SGD test scripts. Each round runs plain, full and selective once, in
alternating order, each in its own process; every run writes one time per iteration. The first
`--skip` iterations (warm-up) are dropped; the ratio of a run is its median iteration time over the plain
run's of the same round, and the figure is the median over rounds.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "tests" / "python" / "scripts"
WORKLOADS = {
    "mlp_adam": (SCRIPTS / "mlp_adam.py", ["--width", "256"]),
    "cnn_sgd": (SCRIPTS / "cnn_sgd.py", []),
}
# A stand-in deployed set until the 100 inferred invariants exist: the APIs such invariants name.
SELECTIVE_APIS = [
    ("torch.optim.optimizer.Optimizer.zero_grad", "torch.optim.optimizer.Optimizer._optimizer_step_code"),
    ("torch.optim.adam.Adam.step", "torch.optim.adam.adam"),
    ("torch.optim.sgd.SGD.step", "torch.optim.sgd.sgd"),
    ("torch.nn.modules.linear.Linear.forward", "torch.nn.functional.linear"),
    ("torch.nn.modules.conv.Conv2d.forward", "torch.nn.modules.conv.Conv2d._conv_forward"),
    ("torch._tensor.Tensor.backward", "torch.autograd.backward"),
]
ENV = {
    "OMP_NUM_THREADS": "1",
    "GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296",
}


def write_invariants(path: Path) -> None:
    with open(path, "w") as f:
        for parent, child in SELECTIVE_APIS:
            inv = {
                "text_description": f"{parent} contains {child}",
                "relation": "APIContainRelation",
                "params": [
                    {"param_type": "APIParam", "api_full_name": parent},
                    {"param_type": "APIParam", "api_full_name": child},
                ],
                "precondition": {"parent_func_call_pre": {"inverted": False, "preconditions": [{"clauses": "Unconditional"}]}},
                "num_positive_examples": 10,
                "num_negative_examples": 0,
            }
            f.write(json.dumps(inv) + "\n")


def run(method: str, script: Path, args: list, work: Path, iters: int, inv: Path) -> list:
    times = work / f"times_{method}.txt"
    script_args = ["--iters", str(iters), "--times", str(times), *args]
    if method == "plain":
        cmd = [sys.executable, str(script), *script_args]
    else:
        cmd = [sys.executable, "-m", "traincheck.collect_trace", "-p", str(script), "--output-dir", str(work / method)]
        if method == "selective":
            cmd += ["-i", str(inv), "--sampling-interval", "1", "--warm-up-steps", "1"]
        cmd += ["--", *script_args]
    subprocess.run(cmd, check=True, capture_output=True, env={**os.environ, **ENV}, cwd=work)
    return [float(x) for x in times.read_text().split()]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--iters", type=int, default=60)
    parser.add_argument("--skip", type=int, default=5)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tc_overhead_"))
    inv = work / "invariants.json"
    write_invariants(inv)
    print(f"{'workload':10s} {'plain ms/iter':>14s} {'full ratio':>11s} {'selective ratio':>16s}")
    for name, (script, extra) in WORKLOADS.items():
        ratios = {"full": [], "selective": []}
        plain_ms = []
        for r in range(args.rounds):
            order = ["plain", "full", "selective"] if r % 2 == 0 else ["selective", "full", "plain"]
            med = {}
            for method in order:
                t = run(method, script, extra, work, args.iters, inv)[args.skip :]
                med[method] = statistics.median(t)
            plain_ms.append(med["plain"] * 1e3)
            for m in ratios:
                ratios[m].append(med[m] / med["plain"])
        print(
            f"{name:10s} {statistics.median(plain_ms):14.3f} {statistics.median(ratios['full']):11.3f}"
            f" {statistics.median(ratios['selective']):16.3f}"
        )
    print(f"(median over {args.rounds} alternated rounds of per-run median iteration time; runs in {work})")


if __name__ == "__main__":
    main()
