"""Regenerate the deployed invariants of the selective method: invariants/deployed_100.json.

    python eval/perf_overhead/make_deployed_invariants.py [--iters 5] [--count 100] [--seed 0]

1. Collect a reference trace of every workload with `traincheck-collect` (full instrumentation, a few
   iterations, on the CPU).
2. Infer invariants from all traces together: `traincheck-infer -f <trace dirs> -o all.json`.
3. Keep the `APIContainRelation` invariants (the paper deploys 100 of these), and assign each to the
   workloads whose trace calls its parent API.
4. Sample `--count` of them with a fixed seed, round-robin across workloads (one workload after the
   other takes its next not yet chosen invariant), so that every workload has some that apply to it.
5. Write them, one JSON object per line in the invariant file format, sorted by `text_description`
   as the original's `save_invs` does.

Needs `traincheck-collect` and `traincheck-infer` (the project installed); fails with a message if
either is missing. The working folder (traces, all.json) is kept for inspection.
"""
from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make the `eval.perf_overhead` package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from eval.perf_overhead import run as perf_run

RELATION = "APIContainRelation"
DEFAULT_OUT = perf_run.DEFAULT_INVARIANTS
FUNCTION_FIELD = re.compile(r'"function"\s*:\s*"([^"]+)"')


def find_tool(name: str, venv: Path | None = None) -> Path | None:
    """`name` in `venv`'s bin folder, or ours: beside this interpreter first, then on PATH."""
    if venv is not None:
        candidate = venv / "bin" / name
        return candidate if candidate.is_file() else None
    beside = Path(sys.executable).parent / name
    if beside.is_file():
        return beside
    found = shutil.which(name)
    return Path(found) if found else None


def read_invariant_lines(path: Path) -> list[tuple[str, dict]]:
    """(raw line, parsed object) per invariant of a JSON-lines invariant file."""
    result = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            result.append((line, json.loads(line)))
        except json.JSONDecodeError as error:
            raise SystemExit(f"{path}:{number}: not a JSON invariant: {error}")
    return result


def parent_api(invariant: dict) -> str | None:
    params = invariant.get("params") or []
    return params[0].get("api_full_name") if params and isinstance(params[0], dict) else None


def traced_functions(trace_dir: Path) -> set[str]:
    """Names of the APIs recorded in a trace folder's trace_API_* files."""
    names: set[str] = set()
    for path in trace_dir.glob("trace_API_*"):
        with open(path, errors="replace") as f:
            for line in f:
                names.update(FUNCTION_FIELD.findall(line))
    return names


def candidates_by_workload(invariants: list[tuple[str, dict]],
                           functions: dict[str, set[str]]) -> dict[str, list[str]]:
    """For each workload, the raw lines of the APIContain invariants whose parent API it calls."""
    result: dict[str, list[str]] = {w: [] for w in functions}
    for line, invariant in invariants:
        if invariant.get("relation") != RELATION:
            continue
        parent = parent_api(invariant)
        for workload, names in functions.items():
            if parent in names:
                result[workload].append(line)
    return result


def sample_round_robin(candidates: dict[str, list[str]], count: int, seed: int) -> list[str]:
    """Up to `count` distinct invariants: each workload's candidates are shuffled with `seed`, then the
    workloads take turns (in sorted order) picking their next invariant not chosen yet."""
    rng = random.Random(seed)
    queues = {}
    for workload in sorted(candidates):
        pool = sorted(set(candidates[workload]))
        rng.shuffle(pool)
        queues[workload] = pool
    chosen: list[str] = []
    seen: set[str] = set()
    while len(chosen) < count and any(queues.values()):
        for workload in sorted(queues):
            queue = queues[workload]
            while queue and queue[0] in seen:
                queue.pop(0)
            if queue and len(chosen) < count:
                line = queue.pop(0)
                seen.add(line)
                chosen.append(line)
    return chosen


def sorted_for_file(lines: list[str]) -> list[str]:
    return sorted(lines, key=lambda line: (json.loads(line).get("text_description") or "", line))


def check(cmd: list[str], cwd: Path, what: str, log_path: Path, env: dict[str, str]) -> None:
    with open(log_path, "w") as log:
        result = subprocess.run(cmd, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, env=env)
    if result.returncode != 0:
        raise SystemExit(f"{what} failed (exit {result.returncode}): {' '.join(cmd)}\n  see {log_path}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Regenerate invariants/deployed_100.json")
    parser.add_argument("--workloads", nargs="+", default=None, help="default: every workload")
    parser.add_argument("--iters", type=int, default=5, help="iterations of each reference run (default: 5)")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work-dir", type=Path, default=Path("perf_res/deployed_invariants_work"),
                        help="traces, all.json and logs (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--collect-venv", type=Path, default=None,
                        help="use this venv's traincheck-collect (e.g. the original TrainCheck's) instead of ours")
    parser.add_argument("--infer-venv", type=Path, default=None,
                        help="use this venv's traincheck-infer instead of ours (the trace and invariant "
                             "formats are shared)")
    args = parser.parse_args(argv)

    collect_venv = args.collect_venv.resolve() if args.collect_venv else None
    infer_venv = args.infer_venv.resolve() if args.infer_venv else None
    tools = {"traincheck-collect": find_tool("traincheck-collect", collect_venv),
             "traincheck-infer": find_tool("traincheck-infer", infer_venv)}
    missing = [name for name, path in tools.items() if path is None]
    if missing:
        print(f"error: {' and '.join(missing)} not found (looked in the given venv, else beside "
              f"{sys.executable} and on PATH). Install the project first (pip install .), or name another "
              "install with --collect-venv / --infer-venv, then run this again.", file=sys.stderr)
        return 2

    workloads = args.workloads or perf_run.default_workload_order(perf_run.discover_workloads())
    work = args.work_dir.resolve()
    if work.exists():
        shutil.rmtree(work)
    (work / "logs").mkdir(parents=True)
    # With another venv's tools, collect as the runner's peer method does (the original collector takes
    # the script's arguments through a launcher, not after `--`).
    method = "peer-monkey-patch" if collect_venv else "monkey-patch"
    opts = perf_run.Options(workloads=workloads, methods=[method], device=args.device, iters=args.iters,
                            peer_venv=collect_venv)
    env = perf_run.child_environment(method, opts)

    trace_dirs = {}
    for workload in workloads:
        src = work / "src" / workload
        perf_run.copy_workload(perf_run.WORKLOADS_DIR, workload, src)
        trace_dir = work / "traces" / workload
        cmd = perf_run.build_command(method, src, trace_dir, opts)
        print(f"collecting {workload} ...", flush=True)
        check(cmd, work, f"collecting {workload}", work / "logs" / f"collect_{workload}.log", env)
        trace_dirs[workload] = trace_dir

    all_json = work / "all.json"
    print("inferring ...", flush=True)
    infer_env = perf_run.child_environment("peer-monkey-patch" if infer_venv else "monkey-patch",
                                           perf_run.Options(workloads=workloads, methods=[], peer_venv=infer_venv))
    check([str(tools["traincheck-infer"]), "-f", *map(str, trace_dirs.values()), "-o", str(all_json)],
          work, "traincheck-infer", work / "logs" / "infer.log", infer_env)

    invariants = read_invariant_lines(all_json)
    functions = {w: traced_functions(d) for w, d in trace_dirs.items()}
    candidates = candidates_by_workload(invariants, functions)
    chosen = sample_round_robin(candidates, args.count, args.seed)
    contain = sum(1 for _, inv in invariants if inv.get("relation") == RELATION)
    print(f"{len(invariants)} invariants inferred, {contain} {RELATION}; chose {len(chosen)}:")
    chosen_set = set(chosen)
    for workload in workloads:
        applicable = sum(1 for line in candidates[workload] if line in chosen_set)
        print(f"  {workload:<12} {len(candidates[workload]):>5} candidates, {applicable:>3} deployed apply to it")
    if len(chosen) < args.count:
        print(f"warning: only {len(chosen)} {RELATION} invariants available, fewer than {args.count}",
              file=sys.stderr)
    if not chosen:
        print("error: nothing to deploy", file=sys.stderr)
        return 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(line + "\n" for line in sorted_for_file(chosen)))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
