"""Peak memory and memory growth per step under collect, on models with large activations (docs/collection.md §Memory).

    python bench/large_activation_memory.py [--sizes 25 100 400] [--steps 200] [--device cpu|cuda]

Workload: bench/workloads/large_logits.py, a language-model head whose logits are 25, 100 and 400 MB per
batch; each step trains on one batch and evaluates one under no_grad. Each run is its own process and
writes its resident size (VmRSS) after every step. Modes, all on the same script:

| mode | command |
|---|---|
| naive | `python large_logits.py` |
| full, reclaim off (baseline) | `traincheck-collect -p large_logits.py` with TRAINCHECK_HEAP_RECLAIM_MB=0 |
| full | `traincheck-collect -p large_logits.py` (the recorder as shipped) |
| selective | the same with `-i` the overhead evaluation's 100 deployed invariants and `--no-online-check` |
| selective + check | the same with the in-process check of those invariants |

Printed per size and mode: the peak RSS of the run (the training process's largest VmRSS, and wait4's
ru_maxrss over the launcher and its children), its ratio to naive, and the growth per step (least-squares
slope of VmRSS over the second half of the steps, MB per step). The budget column checks peak <= 1.10 x
naive + BUDGET_MB (docs/collection.md §Memory). A run whose RSS passes --rss-limit-mb is killed and shown
as such: before the fix, the baseline mode grows until it is. The environment is the one a user has: no
GLIBC_TUNABLES (the overhead evaluation sets them for timing; they change where glibc puts tensors).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORKLOAD = ROOT / "bench" / "workloads" / "large_logits.py"
INVARIANTS = ROOT / "eval" / "perf_overhead" / "invariants" / "deployed_100.json"
BUDGET_MB = 160  # docs/collection.md §Memory: heap reclaim step 64 + event chunks + tables, see there

MODES = {
    "naive": ([], {}),
    "full-noreclaim": (["collect"], {"TRAINCHECK_HEAP_RECLAIM_MB": "0"}),
    "full": (["collect"], {}),
    "selective": (["collect", "-i", str(INVARIANTS), "--no-online-check"], {}),
    "selective+check": (["collect", "-i", str(INVARIANTS)], {}),
}


def slope_per_step(values: list[float]) -> float:
    """Least-squares slope of the second half (MB per step): the first half holds warm-up growth."""
    tail = values[len(values) // 2 :]
    n = len(tail)
    if n < 2:
        return 0.0
    mean_x = (n - 1) / 2
    mean_y = sum(tail) / n
    num = sum((i - mean_x) * (y - mean_y) for i, y in enumerate(tail))
    den = sum((i - mean_x) ** 2 for i in range(n))
    return num / den


def tree_rss_mb(root: int) -> float:
    """The largest VmRSS among `root` and its descendants (the training process under the launcher)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    best, stack = 0.0, [root]
    while stack:
        pid = stack.pop()
        stack.extend(children.get(pid, []))
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        best = max(best, int(line.split()[1]) / 1024.0)
        except OSError:
            pass
    return best


def run_one(mode: str, size_mb: float, steps: int, device: str, limit_mb: float, work: Path) -> dict:
    extra, env_extra = MODES[mode]
    run_dir = work / f"{mode}_{size_mb:g}"
    run_dir.mkdir(parents=True)
    rss_file = run_dir / "rss_per_step.txt"
    script_args = ["--logits-mb", str(size_mb), "--steps", str(steps), "--device", device, "--rss-file", str(rss_file)]
    if extra:
        cmd = ["traincheck-collect", "-p", str(WORKLOAD), "--output-dir", str(run_dir / "trace"), *extra[1:], "--", *script_args]
    else:
        cmd = [sys.executable, str(WORKLOAD), *script_args]
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"), **env_extra)
    env.pop("GLIBC_TUNABLES", None)
    start = time.time()
    proc = subprocess.Popen(cmd, cwd=run_dir, env=env, stdout=subprocess.DEVNULL, stderr=open(run_dir / "stderr.txt", "w"),
                            start_new_session=True)
    sampled_peak, killed = 0.0, False
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        sampled_peak = max(sampled_peak, tree_rss_mb(proc.pid))
        if sampled_peak > limit_mb and not killed:
            killed = True
            os.killpg(proc.pid, signal.SIGKILL)  # the launcher's session: the training process with it
        time.sleep(0.1)
    proc.returncode = os.waitstatus_to_exitcode(status)
    values = [float(x) for x in rss_file.read_text().split()] if rss_file.exists() else []
    return {
        "peak_mb": max([sampled_peak, usage.ru_maxrss / 1024.0, *values]),
        "growth_mb_per_step": slope_per_step(values),
        "steps_done": len(values),
        "killed": killed,
        "rc": proc.returncode,
        "seconds": time.time() - start,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=float, nargs="+", default=[25, 100, 400], help="logits MB per batch")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--device", default="cpu")
    p.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    p.add_argument("--rss-limit-mb", type=float, default=6000, help="a run past this is killed (and shown so)")
    p.add_argument("--work", default=None, help="keep the runs here (default: a temporary folder, removed)")
    args = p.parse_args()
    if shutil.which("traincheck-collect") is None:
        sys.exit("traincheck-collect is not installed (pip install --no-build-isolation .)")
    work = Path(args.work or tempfile.mkdtemp(prefix="tc_largemem_"))
    print(f"{'logits':>7} {'mode':<16} {'peak MB':>8} {'x naive':>8} {'MB/step':>8} {'budget':>7} {'steps':>6} {'s':>6}")
    try:
        for size in args.sizes:
            naive_peak = None
            for mode in args.modes:
                r = run_one(mode, size, args.steps, args.device, args.rss_limit_mb, work)
                if mode == "naive":
                    naive_peak = r["peak_mb"]
                ratio = r["peak_mb"] / naive_peak if naive_peak else float("nan")
                within = "-" if naive_peak is None else ("ok" if r["peak_mb"] <= 1.10 * naive_peak + BUDGET_MB else "OVER")
                note = " killed at the RSS limit" if r["killed"] else (f" exit {r['rc']}" if r["rc"] else "")
                print(f"{size:>6g}M {mode:<16} {r['peak_mb']:>8.0f} {ratio:>8.2f} {r['growth_mb_per_step']:>8.2f} "
                      f"{within:>7} {r['steps_done']:>6} {r['seconds']:>6.0f}{note}", flush=True)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
