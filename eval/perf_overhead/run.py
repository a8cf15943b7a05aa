"""Run the performance-overhead evaluation (the paper's Figure 7) end to end.

    python -m eval.perf_overhead.run            # from the repository root: every workload, every method

Each (workload, method) runs in its own process. Within a round, the methods of a workload run at the
same time and take turns iteration by iteration (lockstep), so that the i-th iterations of all methods
meet the same machine state; settrace (and the original's full instrumentation) run alone, settrace in
the first round only, and a method that hit its time limit is not repeated. Per run, the workload's iteration times are
kept in `<out>/raw/`, the repeats are merged per iteration (median) into
`<out>/e2e_<workload>_<method>.txt`, and the analysis writes `<out>/overhead_e2e.csv`,
`<out>/performance.pdf` and `.png`, and prints a table. See README.md here.
"""
from __future__ import annotations

import argparse
import csv
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make the `eval.perf_overhead` package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from eval.perf_overhead import analysis, memory_analysis
from eval.perf_overhead import seed_workloads as seeds
from eval.perf_overhead.run_process import (CPU_TIMES_FILE, DEFAULT_RSS_LIMIT_MB, KILL_GRACE_SECONDS,  # noqa: F401
                                            RSS_FILE, Launched, RunOutcome, launch, run_with_time_limit,
                                            stop_process_group, wait_for)

HERE = Path(__file__).resolve().parent
WORKLOADS_DIR = HERE / "workloads"
SETTRACE_RUNNER = HERE / "settrace_runner.py"
DEFAULT_INVARIANTS = HERE / "invariants" / "deployed_100.json"

TIMES_FILE = "iteration_times.txt"  # wall time per iteration, written by every workload
CPU_DIR = "cpu"  # <out>/cpu/ holds the same files and analysis as <out>/, for CPU time

# "default": what `traincheck-collect -p` does with nothing else, full recording with the shipped pack checked
# in-process; "monkey-patch" is the original's full mode, recording only (--no-pack).
BASE_METHODS = ("naive", "settrace", "monkey-patch", "selective", "default")
PEER_METHODS = ("peer-monkey-patch", "peer-selective")
# Run only when named (--methods, bench/descriptor_overhead.py): full instrumentation with
# --instr-descriptors, which also wraps torch.Tensor's ~600 C methods.
DESCRIPTOR_METHOD = "monkey-patch-descriptors"
ALL_METHODS = BASE_METHODS + PEER_METHODS + (DESCRIPTOR_METHOD,)
SELECTIVE_METHODS = ("selective", "peer-selective")
COLLECTOR_METHODS = ("monkey-patch", "selective", "default", "peer-monkey-patch", "peer-selective", DESCRIPTOR_METHOD)
# Our collector's methods that record only, as the original's modes do.
RECORD_ONLY_METHODS = ("monkey-patch", DESCRIPTOR_METHOD)

# Methods run in the first round only: their overhead (tens to hundreds of x) dwarfs the machine's noise,
# and each run costs up to its time limit.
FIRST_ROUND_ONLY = ("settrace",)
# Methods that run alone rather than in the lockstep ring (see run_lockstep): so slow that the others
# would spend their time limits waiting for their turn.
NOT_IN_LOCKSTEP = ("settrace", "peer-monkey-patch")
DEFAULT_TIME_LIMITS = {"settrace": 60.0}
DEFAULT_TIME_LIMIT = 300.0
# glibc's malloc trimming made a 6 ms CNN iteration swing by 6-28 ms (README.md here, "Noise control").
GLIBC_TUNABLES = "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296"


def discover_workloads(workloads_dir: Path = WORKLOADS_DIR) -> list[str]:
    return sorted(p.name for p in workloads_dir.iterdir() if (p / "main.py").is_file())


def default_workload_order(names: list[str]) -> list[str]:
    """The paper's three first, then the others alphabetically."""
    first = [n for n in ("mnist", "resnet18", "transformer") if n in names]
    return first + [n for n in names if n not in first]


# ----------------------------------------------------------------------------------------------------
# Options and commands


@dataclass
class Options:
    workloads: list[str]
    methods: list[str]
    device: str = "cpu"
    iters: int = 100
    repeats: int = 3
    warmup: int = 5
    lockstep: bool = True
    time_limits: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_TIME_LIMITS))
    default_time_limit: float = DEFAULT_TIME_LIMIT
    out: Path = Path("perf_res")
    invariants: Path = DEFAULT_INVARIANTS
    peer_venv: Path | None = None
    track_vars: bool = False
    threads: int = 1
    keep_runs: bool = False
    workloads_dir: Path = WORKLOADS_DIR
    workload_args: list[str] = field(default_factory=list)
    rss_limit_mb: float | None = DEFAULT_RSS_LIMIT_MB

    def time_limit(self, method: str) -> float:
        return self.time_limits.get(method, self.default_time_limit)


def find_collector(peer_venv: Path | None = None) -> Path | None:
    """traincheck-collect of the peer venv, or ours: beside this interpreter first, then on PATH."""
    if peer_venv is not None:
        candidate = peer_venv / "bin" / "traincheck-collect"
        return candidate if candidate.is_file() else None
    beside = Path(sys.executable).parent / "traincheck-collect"
    if beside.is_file():
        return beside
    found = shutil.which("traincheck-collect")
    return Path(found) if found else None


def unavailable_reason(method: str, opts: Options) -> str | None:
    """Why `method` cannot run in this setup, or None when it can."""
    if method not in ALL_METHODS:
        return f"unknown method (known: {', '.join(ALL_METHODS)})"
    if method in PEER_METHODS:
        if opts.peer_venv is None:
            return "needs --peer-venv (a venv with the original traincheck)"
        if find_collector(opts.peer_venv) is None:
            return f"{opts.peer_venv}/bin/traincheck-collect does not exist"
    elif method in COLLECTOR_METHODS and find_collector() is None:
        return "traincheck-collect is not installed (not beside this Python, not on PATH)"
    if method in SELECTIVE_METHODS and not opts.invariants.is_file():
        return (f"no deployed invariants at {opts.invariants} "
                "(generate them with eval/perf_overhead/make_deployed_invariants.py)")
    return None


def workload_args(opts: Options) -> list[str]:
    return ["--device", opts.device, "--iters", str(opts.iters), *opts.workload_args]


def config_name(opts: Options) -> str:
    return "md-config-var.yml" if opts.track_vars else "md-config.yml"


def write_peer_launcher(src_dir: Path, opts: Options) -> Path:
    """The original collector passes no arguments to the script; it runs a launcher (`-s`/`shscript`)
    instead, replacing the script's name in it. Write one, and a config that names it."""
    python = opts.peer_venv / "bin" / "python"
    launcher = src_dir / "run.sh"
    args = " ".join(workload_args(opts))
    launcher.write_text(f"#!/bin/bash\nexec {python} main.py {args}\n")
    config = src_dir / f"peer-{config_name(opts)}"
    config.write_text((src_dir / config_name(opts)).read_text().rstrip("\n") + f"\nshscript: {launcher}\n")
    return config


def build_command(method: str, src_dir: Path, out_dir: Path, opts: Options) -> list[str]:
    """The command line of one run. `src_dir` holds a private copy of the workload (the original
    collector writes its instrumented script beside the original one); `out_dir` is the run's cwd
    (naive, settrace) or the collector's --output-dir (which it makes the script's cwd)."""
    script = str(src_dir / "main.py")
    if method == "naive":
        return [sys.executable, script, *workload_args(opts)]
    if method == "settrace":
        return [sys.executable, str(SETTRACE_RUNNER), "--log", str(out_dir / "settrace_calls.log"),
                script, *workload_args(opts)]
    selective = ["-i", str(opts.invariants.resolve())] if method in SELECTIVE_METHODS else []
    if method in PEER_METHODS:
        config = write_peer_launcher(src_dir, opts)
        return [str(find_collector(opts.peer_venv)), "--use-config", "--config", str(config),
                "--output-dir", str(out_dir), *selective]
    descriptors = ["--instr-descriptors"] if method == DESCRIPTOR_METHOD else []
    record_only = ["--no-pack"] if method in RECORD_ONLY_METHODS else []
    return [str(find_collector()), "--use-config", "--config", str(src_dir / config_name(opts)),
            "--output-dir", str(out_dir), *selective, *descriptors, *record_only, "--", *workload_args(opts)]


def child_environment(method: str, opts: Options) -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        "OMP_NUM_THREADS": str(opts.threads),
        "MKL_NUM_THREADS": str(opts.threads),
        "GLIBC_TUNABLES": GLIBC_TUNABLES,
        "PYTHONUNBUFFERED": "1",
        # The collector sets PYTORCH_JIT=0 for the script it runs; every method gets it, so that the
        # processes differ only by the instrumentation.
        "PYTORCH_JIT": "0",
    })
    if method in PEER_METHODS:
        env["VIRTUAL_ENV"] = str(opts.peer_venv)
        env["PATH"] = f"{opts.peer_venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


# ----------------------------------------------------------------------------------------------------
# The evaluation


@dataclass
class RunRecord:
    workload: str
    method: str
    round: int
    status: str
    returncode: int | None
    iterations: int
    elapsed: float
    peak_rss_mb: float = math.nan
    rss_growth_mb_per_iter: float = math.nan  # slope over the second half of the run, where written


def rotated(methods: list[str], k: int) -> list[str]:
    if not methods:
        return []
    k %= len(methods)
    return methods[k:] + methods[:k]


def plan_methods(opts: Options) -> tuple[list[str], dict[str, str]]:
    """The methods that can run, and a reason for each one skipped."""
    runnable, skipped = [], {}
    for method in opts.methods:
        reason = unavailable_reason(method, opts)
        if reason is None:
            runnable.append(method)
        else:
            skipped[method] = reason
    return runnable, skipped


def run_evaluation(opts: Options, printer=print) -> list[RunRecord]:
    methods, skipped = plan_methods(opts)
    for method, reason in skipped.items():
        printer(f"skipping {method}: {reason}", flush=True)
    if "naive" not in methods and methods:
        printer("note: without naive no overhead can be computed; raw times are still recorded")

    out = opts.out
    for sub in ("raw", "logs", "runs"):
        (out / sub).mkdir(parents=True, exist_ok=True)
    once = [m for m in methods if m in FIRST_ROUND_ONLY]
    def runs_of(workload: str) -> int:
        mine = [m for m in methods if not seeds.is_seed_workload(workload) or m in seeds.SEED_METHODS]
        return len(mine) * opts.repeats - len([m for m in once if m in mine]) * (opts.repeats - 1)
    total = sum(runs_of(w) for w in opts.workloads)
    records: list[RunRecord] = []
    runs: dict[tuple[str, str], list[list[float]]] = {}
    cpu_runs: dict[tuple[str, str], list[list[float]]] = {}
    (out / CPU_DIR).mkdir(exist_ok=True)
    not_repeated: set[tuple[str, str]] = set()
    started = time.perf_counter()
    counter = iter(range(1, total + 1))

    def prefix(rnd: int, workload: str, method: str) -> str:
        """The progress prefix of the next run: its number of all runs, round, workload and method."""
        return f"[{next(counter):>3}/{total}] round {rnd + 1} {workload:<12} {method:<18}"

    def keep(record: RunRecord, outcome: RunOutcome) -> None:
        records.append(record)
        write_manifest(records, out / "runs.csv")  # after every run: an interrupted run keeps it
        name = analysis.result_file_name(record.workload, record.method)
        for times, store, folder in ((outcome.times, runs, out), (outcome.cpu_times, cpu_runs, out / CPU_DIR)):
            if times:
                store.setdefault((record.workload, record.method), []).append(times)
                merged = analysis.merge_repeats(store[(record.workload, record.method)])
                (folder / name).write_text(format_times(merged))
        if record.status in ("time limit", "rss limit"):
            not_repeated.add((record.workload, record.method))

    def result_line(record: RunRecord) -> str:
        total_min = (time.perf_counter() - started) / 60
        return (f" {record.elapsed:6.1f}s  {record.iterations:>4} iterations  peak RSS "
                f"{record.peak_rss_mb:6.0f} MB  {describe_status(record, opts)}  [{total_min:.1f} min]")

    for rnd in range(opts.repeats):
        for workload in opts.workloads:
            todo = []
            seed = seeds.is_seed_workload(workload)
            for method in rotated(methods, rnd):
                if seed and method not in seeds.SEED_METHODS:
                    continue
                if rnd > 0 and method in FIRST_ROUND_ONLY:
                    continue
                if (workload, method) in not_repeated:
                    printer(f"{prefix(rnd, workload, method)} not repeated (it hit its time or RSS limit)", flush=True)
                    continue
                todo.append(method)
            # The paper's scripts do not take turns (no TurnTaking): they run one after the other.
            ring = [m for m in todo if opts.lockstep and not seed and m not in NOT_IN_LOCKSTEP]
            if len(ring) < 2:
                ring = []
            for method in (m for m in todo if m not in ring):
                printer(f"{prefix(rnd, workload, method)} ...", end="", flush=True)
                record, outcome = run_one(workload, method, rnd, opts)
                keep(record, outcome)
                printer(result_line(record), flush=True)
            if ring:
                printer(f"{'':>9} round {rnd + 1} {workload:<12} {' + '.join(ring)}, in lockstep ...", flush=True)
                for record, outcome in run_lockstep(workload, ring, rnd, opts):
                    keep(record, outcome)
                    printer(prefix(rnd, workload, record.method) + result_line(record), flush=True)
    return records


def describe_status(record: RunRecord, opts: Options) -> str:
    if record.status == "time limit":
        return f"stopped at the {opts.time_limit(record.method):g} s limit"
    if record.status == "rss limit":
        return f"stopped at the {opts.rss_limit_mb:g} MB RSS limit"
    if record.status == "failed":
        return f"FAILED (exit {record.returncode}, see logs/)"
    if record.status == "no iterations":
        return "FAILED (no iteration times written, see logs/)"
    return "ok"


COMMON_MODULE = "workload_common.py"  # what the workloads share; see workloads/workload_common.py


def copy_workload(workloads_dir: Path, workload: str, dest: Path) -> None:
    """A private copy of `workloads_dir/<workload>` in `dest`, with the workloads' shared module
    (`workload_common.py`, where `workloads_dir` has one) beside its `main.py`: every method runs the
    script with its own folder as sys.path[0], and the copy is away from `workloads_dir`."""
    shutil.copytree(workloads_dir / workload, dest,
                    ignore=shutil.ignore_patterns("__pycache__", "_traincheck_*", TIMES_FILE, CPU_TIMES_FILE,
                                                  RSS_FILE))
    common = workloads_dir / COMMON_MODULE
    if common.is_file():
        shutil.copy2(common, dest / COMMON_MODULE)


@dataclass
class PreparedRun:
    workload: str
    method: str
    round: int
    tag: str
    run_root: Path
    out_dir: Path
    cmd: list[str]


def prepare_run(workload: str, method: str, rnd: int, opts: Options) -> PreparedRun:
    """A fresh folder with a private copy of the workload, and the command line to run there."""
    tag = f"{workload}_{method}_r{rnd + 1}"
    run_root = opts.out / "runs" / tag
    if run_root.exists():
        shutil.rmtree(run_root)
    src_dir, out_dir = run_root / "src", run_root / "out"
    if seeds.is_seed_workload(workload):  # the paper's script runs in its own folder's copy
        seeds.prepare_copy(workload, src_dir, opts.device)
        out_dir = src_dir if method == "naive" else out_dir
        return PreparedRun(workload, method, rnd, tag, run_root, out_dir,
                           seeds.build_command(workload, method, src_dir, out_dir))
    copy_workload(opts.workloads_dir, workload, src_dir)
    if method not in COLLECTOR_METHODS:
        out_dir.mkdir(parents=True)  # the collector makes its own output dir
    return PreparedRun(workload, method, rnd, tag, run_root, out_dir, build_command(method, src_dir, out_dir, opts))


def start_run(run: PreparedRun, opts: Options, extra_env: dict[str, str] | None = None) -> Launched:
    env = child_environment(run.method, opts)
    if seeds.is_seed_workload(run.workload):
        env = seeds.environment(run.workload, opts.device, env)
    env.update(extra_env or {})
    return launch(run.cmd, cwd=run.out_dir if run.out_dir.exists() else run.run_root, env=env,
                  limit=opts.time_limit(run.method), log_path=opts.out / "logs" / f"{run.tag}.log",
                  rss_limit_mb=opts.rss_limit_mb)


def finish_run(run: PreparedRun, launched: Launched, opts: Options) -> tuple[RunRecord, RunOutcome]:
    outcome = wait_for(launched, run.out_dir / TIMES_FILE)
    if outcome.times:
        (opts.out / "raw" / f"{run.tag}.txt").write_text(format_times(outcome.times))
    if outcome.cpu_times:
        (opts.out / "raw" / f"{run.tag}.cpu.txt").write_text(format_times(outcome.cpu_times))
    if not opts.keep_runs:
        shutil.rmtree(run.run_root, ignore_errors=True)
    if outcome.rss_mb:
        (opts.out / "raw" / f"{run.tag}.rss.txt").write_text(format_times(outcome.rss_mb))
    record = RunRecord(run.workload, run.method, run.round + 1, outcome.status, outcome.returncode,
                       len(outcome.times), outcome.elapsed, outcome.peak_rss_mb,
                       memory_analysis.rss_growth_per_iteration(outcome.rss_mb))
    return record, outcome


def run_one(workload: str, method: str, rnd: int, opts: Options) -> tuple[RunRecord, RunOutcome]:
    run = prepare_run(workload, method, rnd, opts)
    return finish_run(run, start_run(run, opts), opts)


def run_lockstep(workload: str, methods: list[str], rnd: int, opts: Options) -> list[tuple[RunRecord, RunOutcome]]:
    """Run `methods` on `workload` at the same time, taking turns iteration by iteration (a ring of FIFOs,
    see TurnTaking in workloads/workload_common.py): each method's i-th iteration runs right after the
    previous method's, on the same machine state. Start-up and the recorder's writer thread overlap;
    timed regions never do."""
    runs = [prepare_run(workload, m, rnd, opts) for m in methods]
    fifo_dir = Path(tempfile.mkdtemp(prefix="turns_", dir=opts.out / "runs"))
    fifos = [fifo_dir / f"{i}.fifo" for i in range(len(runs))]
    for f in fifos:
        os.mkfifo(f)
    launched = []
    try:
        for i, run in enumerate(runs):
            turns = f"{fifos[i]},{fifos[(i + 1) % len(runs)]},{1 if i == 0 else 0}"
            launched.append(start_run(run, opts, {"TC_EVAL_TURNS": turns}))
        return [finish_run(run, proc, opts) for run, proc in zip(runs, launched)]
    except BaseException:
        for proc in launched:
            stop_process_group(proc)
        raise
    finally:
        shutil.rmtree(fifo_dir, ignore_errors=True)


def format_times(times: list[float]) -> str:
    return "".join(f"{t!r}\n" for t in times)


def write_manifest(records: list[RunRecord], path: Path) -> None:
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["workload", "method", "round", "status", "returncode", "iterations", "elapsed_s",
                         *memory_analysis.MANIFEST_MEMORY_COLUMNS])
        for r in records:
            writer.writerow([r.workload, r.method, r.round, r.status,
                             "" if r.returncode is None else r.returncode, r.iterations, f"{r.elapsed:.2f}",
                             analysis.format_optional(r.peak_rss_mb, 1),
                             analysis.format_optional(r.rss_growth_mb_per_iter, 3)])


def analyse(opts: Options, printer=print) -> list[analysis.OverheadRow]:
    """Analysis of whatever `e2e_*.txt` files are in the results folder: CSV, table, plot; and the same
    CSV and table for the CPU times in `<out>/cpu/` when there are any."""
    cpu_dir = opts.out / CPU_DIR
    cpu_results = analysis.load_results(cpu_dir) if cpu_dir.is_dir() else {}
    if cpu_results:
        cpu_rows = analysis.compute_overheads(cpu_results, opts.warmup, task_order=opts.workloads)
        analysis.write_csv(cpu_rows, cpu_dir / "overhead_e2e.csv")
        printer(f"\nOverhead in process CPU time per iteration (less sensitive to other load on the machine; "
                f"not meaningful on a GPU), device {opts.device}:")
        printer(analysis.format_table(cpu_rows))
        printer(f"wrote {cpu_dir / 'overhead_e2e.csv'}")

    results = analysis.load_results(opts.out)
    rows = analysis.compute_overheads(results, opts.warmup, task_order=opts.workloads)
    memory = memory_analysis.compute_memory(memory_analysis.read_manifest(opts.out / "runs.csv"))
    rows = memory_analysis.attach_memory(rows, {k: v for k, v in memory.items() if k[0] in opts.workloads})
    csv_path = opts.out / "overhead_e2e.csv"
    analysis.write_csv(rows, csv_path)
    printer(f"\nOverhead in wall time per iteration against naive (mean ± std over iterations after "
            f"{opts.warmup} warm-up; (n) = iterations compared), device {opts.device}; peak RSS over naive:")
    printer(analysis.format_table(rows))
    printer(f"\nwrote {csv_path}")
    if not rows:
        printer("no plot: no method could be compared with naive")
        return rows
    try:
        from eval.perf_overhead.plot import plot_overheads
        for path in plot_overheads(rows, opts.out / "performance",
                                   title=f"per-iteration overhead, {opts.device}"):
            printer(f"wrote {path}")
    except ImportError:
        printer("no plot: matplotlib is not installed (pip install matplotlib)")
    return rows


# ----------------------------------------------------------------------------------------------------
# Command line


def parse_time_limits(values: list[str]) -> tuple[dict[str, float], float]:
    """`--time-limit 120` sets every method's limit; `--time-limit settrace=60` one method's."""
    limits, default = dict(DEFAULT_TIME_LIMITS), DEFAULT_TIME_LIMIT
    for value in values:
        method, sep, seconds = value.rpartition("=")
        try:
            number = float(seconds)
        except ValueError:
            raise argparse.ArgumentTypeError(f"bad --time-limit {value!r}: expected SECONDS or METHOD=SECONDS")
        if sep:
            limits[method] = number
        else:
            default = number
            limits = {m: number for m in limits}
    return limits, default


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m eval.perf_overhead.run",
        description="Per-iteration overhead of settrace, full and selective instrumentation (Figure 7).")
    parser.add_argument("--workloads", nargs="+", default=None, help="default: every folder in workloads/")
    parser.add_argument("--methods", nargs="+", default=None,
                        help=f"default: {' '.join(BASE_METHODS)} (plus {' '.join(PEER_METHODS)} with --peer-venv)")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--iters", type=int, default=100, help="training iterations per run (default: 100)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="rounds; runs of a method are merged per iteration by median (default: 3)")
    parser.add_argument("--no-lockstep", dest="lockstep", action="store_false",
                        help="run every method alone, one after the other, instead of taking turns "
                             "iteration by iteration (see README)")
    parser.add_argument("--warmup", type=int, default=5, help="iterations dropped by the analysis (default: 5)")
    parser.add_argument("--time-limit", action="append", default=[], metavar="[METHOD=]SECONDS",
                        help=f"stop a run after this long and use its completed iterations; default "
                             f"{DEFAULT_TIME_LIMIT:g} s, settrace {DEFAULT_TIME_LIMITS['settrace']:g} s")
    parser.add_argument("--out", type=Path, default=Path("perf_res"), help="results folder (default: perf_res)")
    parser.add_argument("--invariants", type=Path, default=DEFAULT_INVARIANTS,
                        help="deployed invariants for selective (default: invariants/deployed_100.json)")
    parser.add_argument("--peer-venv", type=Path, default=None,
                        help="venv with the original traincheck: adds peer-monkey-patch and peer-selective")
    parser.add_argument("--track-vars", action="store_true", help="use md-config-var.yml (model tracking)")
    parser.add_argument("--threads", type=int, default=1,
                        help="OMP/MKL threads of each run (default: 1; see README)")
    parser.add_argument("--workload-arg", dest="workload_args", action="append", default=[],
                        metavar="ARG", help="extra argument passed to every workload (repeatable)")
    parser.add_argument("--workloads-dir", type=Path, default=WORKLOADS_DIR,
                        help="where the workload folders are (default: workloads/ here)")
    parser.add_argument("--seed-workloads", action="store_true",
                        help=f"also run the paper's own scripts ({', '.join(seeds.SEED_WORKLOADS)}) from "
                             f"${seeds.SEED_DIR_ENV} (default: ../shared/seed-workloads); see README")
    parser.add_argument("--rss-limit", dest="rss_limit_mb", type=float, default=DEFAULT_RSS_LIMIT_MB,
                        metavar="MB", help=f"stop a run whose process group's resident set passes this "
                                           f"(default: {DEFAULT_RSS_LIMIT_MB:g}; 0: no limit)")
    parser.add_argument("--keep-runs", action="store_true",
                        help="keep each run's folder (traces) under <out>/runs")
    parser.add_argument("--analyze-only", action="store_true", help="only analyse the e2e_*.txt files in --out")
    return parser


def options_from_args(args: argparse.Namespace) -> Options:
    workloads_dir = args.workloads_dir.resolve()
    available = discover_workloads(workloads_dir)
    workloads = args.workloads or default_workload_order(available)
    seed_available = seeds.available_seed_workloads()
    if args.seed_workloads:
        if not seed_available:
            raise SystemExit(f"--seed-workloads: no seed workloads in {seeds.seed_dir()} "
                             f"(set {seeds.SEED_DIR_ENV})")
        workloads = [w for w in workloads if w not in seed_available] + seed_available
    available = available + seed_available
    unknown = [w for w in workloads if w not in available]
    if unknown:
        raise SystemExit(f"unknown workload(s): {', '.join(unknown)} (available: {', '.join(available)})")
    methods = args.methods or list(BASE_METHODS) + (list(PEER_METHODS) if args.peer_venv else [])
    time_limits, default_limit = parse_time_limits(args.time_limit)
    return Options(workloads=workloads, methods=methods, device=args.device, iters=args.iters,
                   repeats=args.repeats, warmup=args.warmup, time_limits=time_limits,
                   default_time_limit=default_limit, out=args.out, invariants=args.invariants,
                   peer_venv=args.peer_venv.resolve() if args.peer_venv else None,
                   track_vars=args.track_vars, threads=args.threads, keep_runs=args.keep_runs,
                   workloads_dir=workloads_dir, workload_args=args.workload_args, lockstep=args.lockstep,
                   rss_limit_mb=args.rss_limit_mb or None)


def write_setup(opts: Options, path: Path) -> None:
    """What the numbers were measured with: options, machine, commit."""
    commit = subprocess.run(["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "unknown"
    lines = [f"commit: {commit}", f"python: {sys.version.split()[0]} ({sys.executable})",
             f"cpus: {len(os.sched_getaffinity(0))}", f"load average: {os.getloadavg()}",
             f"collector: {find_collector()}",
             f"peer collector: {find_collector(opts.peer_venv) if opts.peer_venv else None}",
             *(f"{k}: {v}" for k, v in vars(opts).items())]
    path.write_text("\n".join(lines) + "\n")


def cuda_available() -> bool:
    probe = subprocess.run([sys.executable, "-c", "import sys, torch; sys.exit(not torch.cuda.is_available())"],
                           capture_output=True)
    return probe.returncode == 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    opts = options_from_args(args)
    opts.out = opts.out.resolve()
    if not args.analyze_only:
        if opts.device == "cuda" and not cuda_available():
            print("error: --device cuda, but torch sees no CUDA device here", file=sys.stderr)
            return 2
        opts.out.mkdir(parents=True, exist_ok=True)
        for workload in opts.workloads:  # an earlier run's results would mix with this one's
            for method in ALL_METHODS:
                for folder in (opts.out, opts.out / CPU_DIR):
                    (folder / analysis.result_file_name(workload, method)).unlink(missing_ok=True)
        started = time.perf_counter()
        print(f"workloads: {' '.join(opts.workloads)}; device {opts.device}; {opts.iters} iterations; "
              f"{opts.repeats} round(s); results in {opts.out}", flush=True)
        write_setup(opts, opts.out / "setup.txt")
        records = run_evaluation(opts)
        failed = [r for r in records if r.status in ("failed", "no iterations")]
        print(f"\n{len(records)} runs in {(time.perf_counter() - started) / 60:.1f} min"
              + (f", {len(failed)} failed (see {opts.out / 'logs'})" if failed else ""))
    analyse(opts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
