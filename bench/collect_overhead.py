"""Per-iteration overhead of traincheck-collect (full and selective) against the plain script.

    python bench/collect_overhead.py [--rounds 3] [--iters 60] [--peer-venv VENV]

Workloads: the MLP+Adam and CNN+SGD test scripts. Each round runs plain, full and selective once, in
alternating order, each in its own process; every run writes one time per iteration. The first
`--skip` iterations (warm-up) are dropped; the ratio of a run is its median iteration time over the plain
run's of the same round, and the figure is the median over rounds.

With --peer-venv (a venv with the original `traincheck` from PyPI and torch), its full and selective
modes run the same scripts in the same rounds (fewer iterations: it is hundreds of times slower), so the
two tools are compared side by side.
"""

import argparse
import json
import os
import shutil
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


def peer_command(method: str, script: Path, script_args: list, work: Path, inv: Path) -> list:
    """The original takes script arguments only through a launcher script (-s)."""
    launcher = work / f"run_{method}.sh"
    launcher.write_text("#!/bin/bash\npython " + " ".join([str(script), *map(str, script_args)]) + "\n")
    cmd = ["traincheck-collect", "-p", str(script), "-s", str(launcher), "--output-dir", str(work / method)]
    if method == "peer-selective":
        cmd += ["-i", str(inv), "--sampling-interval", "1", "--warm-up-steps", "1"]
    return cmd


def run(method: str, script: Path, args: list, work: Path, iters: int, inv: Path, peer_venv=None) -> list:
    times = work / f"times_{method}.txt"
    script_args = ["--iters", str(iters), "--times", str(times), *args]
    env = {**os.environ, **ENV}
    if method.startswith("peer-"):
        cmd = peer_command(method, script, script_args, work, inv)
        env["PATH"] = str(Path(peer_venv) / "bin") + os.pathsep + env["PATH"]
        shutil.rmtree(work / method, ignore_errors=True)
    elif method == "plain":
        cmd = [sys.executable, str(script), *script_args]
    else:
        cmd = [sys.executable, "-m", "traincheck.collect_trace", "-p", str(script), "--output-dir", str(work / method),
               "--overwrite"]  # every round reruns into the method's folder
        if method == "selective":
            cmd += ["-i", str(inv), "--sampling-interval", "1", "--warm-up-steps", "1"]
        cmd += ["--", *script_args]
    subprocess.run(cmd, check=True, capture_output=True, env=env, cwd=work)
    return [float(x) for x in times.read_text().split()]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--iters", type=int, default=60)
    parser.add_argument("--skip", type=int, default=5)
    parser.add_argument("--peer-venv", help="venv holding the original traincheck (pip install traincheck)")
    parser.add_argument("--peer-iters", type=int, default=15)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tc_overhead_"))
    inv = work / "invariants.json"
    write_invariants(inv)
    methods = ["full", "selective"] + (["peer-full", "peer-selective"] if args.peer_venv else [])
    print(f"{'workload':10s} {'plain ms/iter':>14s} " + " ".join(f"{m + ' ratio':>20s}" for m in methods))
    for name, (script, extra) in WORKLOADS.items():
        ratios = {m: [] for m in methods}
        plain_ms = []
        for r in range(args.rounds):
            order = ["plain", *methods] if r % 2 == 0 else [*reversed(methods), "plain"]
            med = {}
            for method in order:
                iters = args.peer_iters if method.startswith("peer-") else args.iters
                skip = min(args.skip, iters // 3)
                t = run(method, script, extra, work, iters, inv, args.peer_venv)[skip:]
                med[method] = statistics.median(t)
            plain_ms.append(med["plain"] * 1e3)
            for m in ratios:
                ratios[m].append(med[m] / med["plain"])
        print(f"{name:10s} {statistics.median(plain_ms):14.3f} " + " ".join(f"{statistics.median(ratios[m]):20.3f}" for m in methods))
    print(f"(median over {args.rounds} alternated rounds of per-run median iteration time; runs in {work})")


if __name__ == "__main__":
    main()
