"""Cost and latency of in-process cross-rank checking (docs/analysis.md §Cross-rank checking in-process).

    python bench/cross_rank_overhead.py [--ranks 2 4 8] [--steps 40] [--rounds 2]

DDP training (gloo, CPU, torchrun on this machine) of an MLP, under `traincheck-collect -i` with the
cross-rank Consistency invariant learned from a good run and model tracking, in two states run
alternately, round by round:
  - baseline: the same collect with the exchange off (TRAINCHECK_CROSS_RANK=0): each rank checks only
    its own records;
  - candidate: the exchange on: each rank publishes its step summaries to the job's c10d store and
    compares its peers'.
Per state and rank count, medians over ranks and rounds of:
  - step wall time and the training thread's CPU time per step (time.thread_time), after warm-up;
  - the rest of the process's CPU per step (process CPU minus the training thread's: the recorder's writer
    thread, the exchange's I/O thread, gloo's threads), and the exchange's I/O thread's own CPU per step;
  - store calls and bytes published per step and rank (summary_<pid>.json's cross_rank counts).
The candidate over the baseline is the overhead of checking across ranks in-run. Then one perturbed run
per rank count (rank 1 changes one weight at step `--perturb-step`): the latency from divergence to report,
in steps (the step the training was in when the first cross-rank violation was written, minus the
perturbed step) and in milliseconds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

SCRIPT = """
import json, os, time
import torch, torch.distributed as dist, torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
model = DDP(model)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
torch.manual_seed(1 + rank)
steps, warmup = int(os.environ["STEPS"]), 5
perturb = int(os.environ.get("PERTURB_STEP", "-1"))
walls, cpus = [], []
cpu0 = None
for step in range(1, steps + 1):
    if step == warmup + 1:
        cpu0, thread0 = time.process_time(), time.thread_time()
    t0, c0 = time.perf_counter(), time.thread_time()
    x, y = torch.randn(32, 64), torch.randn(32, 10)
    optimizer.zero_grad()
    nn.functional.mse_loss(model(x), y).backward()
    if step == perturb and rank == 1:
        with torch.no_grad():
            model.module[0].weight[0, 0] += 1e-3
    optimizer.step()
    time.sleep(float(os.environ.get("STEP_SLEEP", "0")))
    if step > warmup:
        walls.append(time.perf_counter() - t0)
        cpus.append(time.thread_time() - c0)
timed = steps - warmup
other_cpu = (time.process_time() - cpu0) - (time.thread_time() - thread0)
with open(f"timing_{rank}.json", "w") as f:
    json.dump({"rank": rank, "wall": walls, "thread_cpu": cpus, "other_cpu_per_step": other_cpu / timed}, f)
dist.destroy_process_group()
"""


def collect(work: Path, out: str, ranks: int, invariants: Path | None, env: dict) -> None:
    (work / "ddp.py").write_text(SCRIPT)
    (work / "run.sh").write_text(f"torchrun --standalone --nproc_per_node={ranks} ddp.py\n")
    cmd = [sys.executable, "-m", "traincheck.collect_trace", "-p", "ddp.py", "-s", "run.sh", "--output-dir", out, "--overwrite",
           "--models-to-track", "model", "--model-tracker-style", "sampler"]
    if invariants is not None:
        cmd += ["-i", str(invariants)]
    result = subprocess.run(cmd, cwd=work, capture_output=True, text=True, env={**os.environ, **env}, timeout=1200)
    if result.returncode != 0:
        raise SystemExit(f"collect failed ({out}):\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")


def learn_invariants(work: Path, steps: int) -> Path:
    collect(work, "good", 2, None, {"STEPS": str(steps)})
    subprocess.run(["traincheck-infer", "-f", "good", "-o", "inv.json"], cwd=work, check=True, capture_output=True)
    cross = [line for line in (work / "inv.json").read_text().splitlines()
             if json.loads(line)["relation"] == "ConsistencyRelation"
             and [p.get("attr_name") for p in json.loads(line)["params"]] == ["data", "data"]]
    if not cross:
        raise SystemExit("no cross-rank Consistency invariant was learned from the good run")
    path = work / "cross_rank.json"
    path.write_text("\n".join(cross) + "\n")
    return path


def measure(work: Path, out: str) -> dict:
    folder = work / out
    timings = [json.loads(p.read_text()) for p in folder.glob("timing_*.json")]
    summaries = [json.loads(p.read_text()) for p in folder.glob("online_check/summary_*.json")]
    steps = len(timings[0]["wall"]) + 5
    cross = [s["cross_rank"] for s in summaries if "cross_rank" in s]
    return {
        "wall_ms": statistics.median(w for t in timings for w in t["wall"]) * 1e3,
        "thread_cpu_ms": statistics.median(c for t in timings for c in t["thread_cpu"]) * 1e3,
        "other_cpu_ms": statistics.median(t["other_cpu_per_step"] for t in timings) * 1e3,
        "store_ops_per_step": statistics.median(c["store_ops"] / steps for c in cross) if cross else 0.0,
        "bytes_per_step": statistics.median(c["bytes_published"] / steps for c in cross) if cross else 0.0,
        "io_cpu_us": statistics.median(c["io_cpu_ns"] / steps / 1e3 for c in cross) if cross else 0.0,
        "violations": sum(s["violations"] for s in summaries),
    }


def latency(work: Path, out: str, perturb: int) -> tuple[float, float]:
    """(steps, ms) from the perturbed step's end to the first cross-rank violation written."""
    folder = work / out
    entries = [json.loads(line) for line in (folder / "online_check" / "failed.log").read_text().splitlines()]
    entries = [e for e in entries if e["invariant"]["relation"] == "ConsistencyRelation"]
    if not entries:
        return float("nan"), float("nan")
    detected = min(e["detection_time"] for e in entries)
    starts = {}  # step -> first record time, over both ranks' state records
    for path in folder.glob("trace_VAR_*.log"):
        for line in path.read_text().splitlines():
            r = json.loads(line)
            s = r["meta_vars"]["step"]
            starts[s] = min(starts.get(s, r["time"]), r["time"])
    running = max(s for s, t in starts.items() if t <= detected)
    ended = starts[perturb + 1]  # the perturbed step ended when the next one began
    return float(running - perturb), (detected - ended) / 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", type=int, nargs="+", default=[2, 4, 8])
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--perturb-step", type=int, default=10)
    ap.add_argument("--step-sleep", type=float, default=0.0, help="seconds each step sleeps (stands for a longer step)")
    ap.add_argument("--work", type=Path, default=None)
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="tc_cross_rank_bench_"))
    work.mkdir(parents=True, exist_ok=True)
    invariants = learn_invariants(work, 12)
    env = {"STEPS": str(args.steps), "STEP_SLEEP": str(args.step_sleep)}
    rows = []
    for n in args.ranks:
        results = {"baseline": [], "candidate": []}
        for r in range(args.rounds):
            order = ["baseline", "candidate"] if r % 2 == 0 else ["candidate", "baseline"]
            for state in order:
                out = f"{state}_{n}_{r}"
                collect(work, out, n, invariants, {**env, "TRAINCHECK_CROSS_RANK": "0" if state == "baseline" else "1"})
                results[state].append(measure(work, out))
        out = f"perturbed_{n}"
        collect(work, out, n, invariants, {**env, "PERTURB_STEP": str(args.perturb_step)})
        lat_steps, lat_ms = latency(work, out, args.perturb_step)
        med = {s: {k: statistics.median(m[k] for m in ms) for k in ms[0]} for s, ms in results.items()}
        rows.append((n, med, lat_steps, lat_ms))

    print(f"\ncross-rank checking in-process, DDP MLP on gloo/CPU, {args.steps} steps, {args.rounds} rounds, work {work}")
    print("ranks | state | step wall ms | train-thread CPU ms/step | other CPU ms/step | exchange thread CPU us/step | "
          "store ops/step/rank | bytes/step/rank | violations (good run)")
    for n, med, _, _ in rows:
        for state in ("baseline", "candidate"):
            m = med[state]
            print(f"{n} | {state} | {m['wall_ms']:.2f} | {m['thread_cpu_ms']:.3f} | {m['other_cpu_ms']:.3f} | "
                  f"{m['io_cpu_us']:.0f} | {m['store_ops_per_step']:.2f} | {m['bytes_per_step']:.0f} | {m['violations']:.0f}")
    print("\nranks | wall ratio | train-thread CPU ratio | other CPU ratio | latency (steps) | latency (ms after the step ended)")
    for n, med, lat_steps, lat_ms in rows:
        b, c = med["baseline"], med["candidate"]
        print(f"{n} | {c['wall_ms'] / b['wall_ms']:.3f}x | {c['thread_cpu_ms'] / b['thread_cpu_ms']:.3f}x | "
              f"{c['other_cpu_ms'] / b['other_cpu_ms']:.3f}x | {lat_steps:.0f} | {lat_ms:.0f}")


if __name__ == "__main__":
    main()
