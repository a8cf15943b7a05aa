"""Consistency checking at model scale: baseline (pairwise, before the grouping) and candidate, side by side.

For 1k / 10k / 50k parameter tensors and 1 / 10 / 100 Consistency invariants (the original's DDP invariant,
each with a stage clause of its own so that they differ; a model whose layers repeat 8 shapes, so the
precondition's groups are large). Those invariants differ only in a constant's values, so the candidate
indexes their step ends once (PairCondition::shape); one more in-process row gives the most of them
`exist` clauses that make every precondition's shape distinct (the same verdicts, nothing shared; a
baseline binary without --distinct-shapes ignores it and runs the plain set), and two more pair
parameters by name, as the invariant our inference learns does (--by-name; a baseline binary without it
runs the plain set, so compare those rows' candidate column only):

- in-process: the recorder's writer-thread CPU per step spent checking (consistency_scale, a C++ driver of
  OnlineChecker as the record sink drives it), in one process ("1 rank": the invariant compares nothing
  within a process, the issue's probe; with no cross-rank exchange the candidate's session idles such
  checks, OnlineChecker::assume_one_process), in one rank that peers could join ("1, own": what a rank
  pays for its own records) and with one or three peers' step ends (2 and 4 ranks, cross-rank in-process);
  and that CPU as a share of a plain training step of a model with as many parameter tensors (torch,
  forward + backward + SGD, no tool), which is what the writer thread has to keep up with;
- offline: traincheck-check and traincheck-onlinecheck on a 2-rank trace of 3 steps: CPU time (user +
  system: the machine is shared), peak RSS (/usr/bin/time) and failed.log's size.

A run over its time limit is killed and shown as ">limit". The baseline binaries are a build of the code
before the change: --baseline-bin (traincheck-check, traincheck-onlinecheck, consistency_scale_base).

    python bench/consistency_scale.py --baseline-bin /work/scale-baseline [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_limited(cmd: list[str], limit: float) -> tuple[float | None, int, str]:
    """(CPU seconds, user + system, or None when killed at `limit` wall seconds; peak RSS in KiB; stdout).

    Through /usr/bin/time: a child forked from this process (torch loaded) would report this process's
    peak RSS as its own when smaller. CPU time, not wall time: this machine is shared."""
    with tempfile.TemporaryFile() as out, tempfile.NamedTemporaryFile("r") as usage_file:
        start = time.monotonic()
        proc = subprocess.Popen(["/usr/bin/time", "-f", "%U %S %M", "-o", usage_file.name, *cmd], stdout=out,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                wall = time.monotonic() - start
                break
            if time.monotonic() - start > limit:
                os.killpg(proc.pid, signal.SIGKILL)
                _, status, usage = os.wait4(proc.pid, 0)
                wall = None
                break
            time.sleep(0.02)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        fields = usage_file.read().split()[-3:]
        if wall is None or len(fields) != 3:
            return None, usage.ru_maxrss, out.read().decode(errors="replace")
        return float(fields[0]) + float(fields[1]), int(fields[2]), out.read().decode(errors="replace")


def invariant_lines(count: int) -> str:
    lines = []
    for i in range(count):
        clauses = [
            {"type": "unequal", "prop_name": "process_id", "additional_path": "None", "prop_dtype": "int"},
            {"type": "unequal", "prop_name": "attributes._ML_DAIKON_data_ID", "additional_path": "None", "prop_dtype": "int"},
            {"type": "unequal", "prop_name": "meta_vars._DATA_PARALLEL_RANK", "additional_path": "None", "prop_dtype": "float"},
            {"type": "consistent", "prop_name": "attributes.nbytes", "additional_path": "None", "prop_dtype": "int"},
            {"type": "consistent", "prop_name": "meta_vars.step", "additional_path": "None", "prop_dtype": "int"},
            {"type": "constant", "prop_name": "meta_vars.stage", "additional_path": "None", "prop_dtype": "str",
             "values": ["training", f"x{i}"]},
            {"type": "consistent", "prop_name": "attributes.ndim", "additional_path": "None", "prop_dtype": "int"},
        ]
        param = {"param_type": "VarTypeParam", "var_type": "torch.nn.Parameter", "attr_name": "data"}
        lines.append(json.dumps({"text_description": f"ddp {i}", "relation": "ConsistencyRelation", "params": [param, param],
                                 "precondition": {"var": {"inverted": False, "preconditions": [{"clauses": clauses}]}},
                                 "num_positive_examples": 448, "num_negative_examples": 2352}))
    return "\n".join(lines) + "\n"


def write_trace(folder: Path, params: int, ranks: int, steps: int, shapes: int = 8) -> None:
    """What consistency_scale.cpp feeds, as files: one trace_VAR file per rank."""
    folder.mkdir(parents=True, exist_ok=True)
    for rank in range(ranks):
        with open(folder / f"trace_VAR_{100 + rank}_7.log", "w") as f:
            for step in range(steps):
                for p in range(params):
                    rows = 1 + p % shapes
                    f.write(
                        f'{{"var_name":"model.{p}.weight","var_type":"torch.nn.Parameter","process_id":{100 + rank},'
                        f'"thread_id":7,"meta_vars":{{"step":{step},"stage":"training","_DATA_PARALLEL_RANK":{rank}}},'
                        f'"type":"state_change","attributes":{{"_ML_DAIKON_data_ID":{1000000 * rank + p},'
                        f'"data":{1000003 * (p + 1) + 7919 * step},"dtype":"torch.float32","ndim":2,"nbytes":{16 * rows},'
                        f'"requires_grad":true}},"time":{1000000000 + step * 1000000 + p + rank}}}\n')


def plain_step_ms(params: int) -> float:
    """A training step of a model with `params` small parameter tensors, no tool: median of 5."""
    import torch

    torch.set_num_threads(1)
    weights = [torch.nn.Parameter(torch.randn(1 + p % 8, 4)) for p in range(params)]
    opt = torch.optim.SGD(weights, lr=0.01, foreach=True)
    times = []
    for _ in range(6):
        start = time.perf_counter()
        loss = torch.stack([w.sum() for w in weights]).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append((time.perf_counter() - start) * 1000)
    times = sorted(times[1:])
    return times[len(times) // 2]


# The first step past the Consistency check's kept window of 16 steps (ConsistencyOnlineCheck::kKeptSteps) and
# the one in which it first prunes.
STEADY_FROM = 18


def checked_ms(result: dict, steady: bool) -> float:
    """A consistency_scale run's ms per step: the steady state's, or the mean over every timed step."""
    if steady and result.get("steady_ms_per_step") is not None:
        return result["steady_ms_per_step"]
    return result["own_ms_per_step"] + result["peer_ms_per_step"]


def fmt(x: float | None, limit: float, unit: str = "") -> str:
    return f">{limit:.0f} s" if x is None else f"{x:.1f}{unit}"


def ratio(base: float | None, cand: float | None, limit: float) -> str:
    if cand is None:
        return "n/a"
    if base is None:
        return f">{limit / max(cand, 1e-9):.0f}x" if cand > 0 else ">1000x"
    return f"{base / max(cand, 1e-9):.1f}x"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline-bin", required=True, help="folder with the baseline's traincheck-check, "
                    "traincheck-onlinecheck and consistency_scale_base")
    ap.add_argument("--candidate-bin", default=str(ROOT / "build/tests/cpp/cli"))
    ap.add_argument("--quick", action="store_true", help="1k and 10k tensors, 1 and 10 invariants, shorter limits")
    ap.add_argument("--limit", type=float, default=None, help="seconds per run before it is killed")
    ap.add_argument("--steps", type=int, default=8, help="steps per in-process run (the first is not timed; "
                    "a Consistency check's kept window fills in 16, after which it frees as much as it keeps: from "
                    f"{STEADY_FROM + 1} steps on, the rows are the steps from {STEADY_FROM} on, the steady state)")
    ap.add_argument("--sizes", type=int, nargs="+", help="parameter tensors (default 1k 10k 50k; --quick 1k 10k)")
    ap.add_argument("--counts", type=int, nargs="+", help="invariants (default 1 10 100; --quick 1 10)")
    args = ap.parse_args()
    base, cand = Path(args.baseline_bin), Path(args.candidate_bin)
    sizes = args.sizes or ([1000, 10000] if args.quick else [1000, 10000, 50000])
    counts = args.counts or ([1, 10] if args.quick else [1, 10, 100])
    steady = args.steps > STEADY_FROM
    limit = args.limit or (10.0 if args.quick else 20.0)
    # A baseline run that timed out at a size times out at every larger one (it is quadratic): skipped.
    timed_out: set[tuple] = set()

    which = f"steps {STEADY_FROM}-{args.steps - 1}, past the kept window" if steady else f"steps 1-{args.steps - 1}"
    print(f"## In-process: writer-thread CPU per step spent checking (ms, {which}), and its share of a plain step")
    print("| tensors | invariants | ranks | plain step ms | baseline ms | candidate ms | ratio | candidate share of step |")
    print("|---|---|---|---|---|---|---|---|")
    for n in sizes:
        step_ms = plain_step_ms(n)
        # The invariants differ only in a constant's values (the candidate indexes their step ends once);
        # then the most of them with preconditions of distinct shapes, where nothing is shared; then the
        # invariant as our inference learns it (pairs by name: replicas, no violation in sync).
        variants = [(c, "") for c in counts] + [(counts[-1], "distinct shapes"), (1, "by name"), (counts[-1], "by name")]
        for count, variant in variants:
            # "1, own": one rank that a peer could join (--alone 0): its own records' cost, which a rank of
            # a multi-rank job pays besides its peers'. A process alone idles the checks (the "1" row).
            setups = [("1", 1, True), ("1, own", 1, False), ("2", 2, False), ("4", 4, False)]
            for ranks, world, alone in setups[:2] if variant == "distinct shapes" else setups:
                row = []
                for side, binary in (("base", base / "consistency_scale_base"), ("cand", cand / "consistency_scale")):
                    key = ("inprocess", side, count, ranks, variant)
                    wall, out = None, ""
                    if key not in timed_out:
                        wall, _, out = run_limited([str(binary), "--params", str(n), "--invariants", str(count), "--ranks",
                                                    str(world), "--alone", str(int(alone)), "--steps", str(args.steps),
                                                    "--distinct-shapes", str(int(variant == "distinct shapes")),
                                                    "--by-name", str(int(variant == "by name")),
                                                    "--steady-from", str(STEADY_FROM)],
                                                   limit)
                    if wall is None:
                        timed_out.add(key)
                    row.append(None if wall is None else checked_ms(json.loads(out.strip().splitlines()[-1]), steady))
                share = "n/a" if row[1] is None else f"{100 * row[1] / step_ms:.1f}%"
                label = f"{count}, {variant}" if variant else str(count)
                print(f"| {n} | {label} | {ranks} | {step_ms:.0f} | {fmt(row[0], limit)} | {fmt(row[1], limit)} | "
                      f"{ratio(row[0], row[1], limit * 1000)} | {share} |", flush=True)

    print()
    print("## Offline: a 2-rank trace of 3 steps (CPU s, peak RSS MB, failed.log MB)")
    print("| tensors | invariants | tool | baseline | candidate | ratio (time) |")
    print("|---|---|---|---|---|---|")
    work = Path(tempfile.mkdtemp(prefix="tc_consistency_scale_"))
    try:
        for n in sizes:
            trace = work / f"trace_{n}"
            write_trace(trace, n, 2, 3)
            for count in counts:
                inv = work / f"inv_{count}.json"
                inv.write_text(invariant_lines(count))
                for tool in ("traincheck-check", "traincheck-onlinecheck"):
                    cells = []
                    for side, folder in (("base", base), ("cand", cand)):
                        out = work / f"out_{side}"
                        shutil.rmtree(out, ignore_errors=True)
                        key = (tool, side, count)
                        if key in timed_out:
                            cells.append(None)
                            continue
                        cmd = [str(folder / tool), "-f", str(trace), "-i", str(inv), "-o", str(out)]
                        if tool == "traincheck-onlinecheck":
                            cmd += ["--exit-on-idle", "0.5", "--poll-interval-ms", "50", "--report-interval-seconds", "0"]
                        wall, rss, _ = run_limited(cmd, limit)
                        if wall is None:
                            timed_out.add(key)
                        failed = sum(f.stat().st_size for f in out.rglob("failed*")) if out.exists() else 0
                        cells.append((wall, rss, failed))
                        shutil.rmtree(out, ignore_errors=True)
                    def cell(c):
                        if c is None:
                            return f">{limit:.0f} s (timed out at a smaller size)"
                        return f"{fmt(c[0], limit, ' s')}, {c[1] / 1024:.0f} MB, {c[2] / 1e6:.1f} MB"
                    b, c = cells
                    print(f"| {n} | {count} | {tool.removeprefix('traincheck-')} | {cell(b)} | {cell(c)} | "
                          f"{ratio(b[0] if b else None, c[0] if c else None, limit)} |", flush=True)
            shutil.rmtree(trace, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
