"""The detection evaluation: silent-bug cases, three invariant settings (same pipeline, transfer, the shipped
pack), the false-positive experiment, our analyzer (offline and in-process) and, with --peer-venv, the
original TrainCheck side by side.

    python -m eval.detection.run                               # every case, CPU, ours only, 1 repetition
    python -m eval.detection.run --peer-venv /tmp/peer --repeat 3
    python -m eval.detection.run --cases zero_grad_missing --no-fp
    python -m eval.detection.run --settings pack --no-fp      # the shipped pack alone: two runs per case

Results go to --out (default detection_res/): report.md, detection.csv, fp.csv, summary.csv, fp_rate.png,
and per repetition rep<r>/ with every trace, invariant file, check result and log. See README.md here.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from dataclasses import fields
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make the `eval.detection` package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from eval.detection import layout as L
from eval.detection.cases import CASES_DIR, CaseError, discover
from eval.detection.pipeline import JOBS_FILE, Options, load_jobs, run_repetition
from eval.detection.report import write_report
from eval.detection.results import DetectionRow, FpRow, detection_rows, fp_rows
from eval.detection.tools import ours, peer

ROWS_FILE = "rows.json"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m eval.detection.run", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=Path("detection_res"), help="results folder (default detection_res)")
    p.add_argument("--cases", nargs="+", help="case names (default: every folder of cases/)")
    p.add_argument("--cases-dir", type=Path, default=CASES_DIR)
    p.add_argument("--workloads", nargs="*", default=None,
                   help="overhead workloads used as extra bug-free programs (default: all; none: --workloads)")
    p.add_argument("--workload-iters", type=int, default=8, help="iterations of each overhead workload (default 8)")
    p.add_argument("--repeat", type=int, default=1, help="repetitions of everything (default 1)")
    p.add_argument("--peer-venv", type=Path, help="a venv with the original TrainCheck 0.2.0 (pip install traincheck==0.2.0)")
    p.add_argument("-j", "--workers", type=int, default=2, help="jobs at a time (default 2)")
    p.add_argument("--transfer-folds", type=int, default=2,
                   help="cases are dealt to this many folds; transfer invariants come from outside a case's fold")
    p.add_argument("--fp-train-sizes", default="1,4,6", help="bug-free programs per training set (default 1,4,6)")
    p.add_argument("--fp-check-count", type=int, default=12, help="bug-free programs checked (default 12)")
    p.add_argument("--no-fp", action="store_true", help="skip the false-positive experiment")
    p.add_argument("--settings", nargs="+", choices=L.SETTINGS, default=list(L.SETTINGS),
                   help="which invariant sources to evaluate (default all: same, transfer, pack); with only pack "
                        "and --no-fp, each case's two checked runs are all that is collected")
    p.add_argument("--pack", default="default", help="the shipped pack of the pack setting (default: default)")
    p.add_argument("--no-in-process", action="store_true", help="skip the in-process checking runs")
    p.add_argument("--time-limit", type=float, default=300.0, help="seconds per collect run and per check of ours")
    p.add_argument("--peer-time-limit", type=float, default=1800.0, help="seconds per infer/check of the original")
    p.add_argument("--report-only", action="store_true", help="rebuild the report from <out>/rows.json")
    p.add_argument("--rows-from", nargs="+", type=Path, default=None,
                   help="with --report-only: the rows.json of these result folders, their repetitions numbered "
                        "one after another (runs split over several invocations)")
    p.add_argument("--csv-from", type=Path, default=None,
                   help="with --report-only: rebuild from the detection.csv and fp.csv of this folder (a landed "
                        "result, e.g. eval/detection/results) instead of rows.json")
    p.add_argument("--peer-repeats", type=int, default=None,
                   help="run the original in the first N repetitions only (default: all)")
    p.add_argument("--peer-no-fp", action="store_true",
                   help="run the original on the same and transfer settings only, not the false-positive experiment "
                        "(the most expensive part of its run)")
    p.add_argument("--rerun-ours", action="store_true",
                   help="run our analyzer (infer, check, in-process) again on the traces of an earlier run in --out, "
                        "keeping its traces and the original's results (same options)")
    p.add_argument("--reanalyze", action="store_true",
                   help="recompute every row from the folders of an earlier run (same options), running nothing")
    return p


def setup_text(opts: Options, args) -> str:
    def cmd(c):
        try:
            return subprocess.run(c, capture_output=True, text=True, timeout=60).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            return "?"
    commit = cmd(["git", "-C", str(L.REPO), "rev-parse", "--short", "HEAD"])
    torch_v = cmd([sys.executable, "-c", "import torch; print(torch.__version__)"])
    peer_v = "-"
    if args.peer_venv:
        peer_v = cmd([str(args.peer_venv / "bin" / "python"), "-c",
                      "import importlib.metadata as m; print(m.version('traincheck'))"])
    collector = shutil.which("traincheck-collect") or "?"
    return (f"Commit {commit}; collector and analyzer from {Path(collector).parent}; "
            f"{platform.node()} ({os.cpu_count()} CPUs), Python {platform.python_version()}, "
            f"torch {torch_v}; original TrainCheck: {peer_v}; {len(opts.cases)} cases, "
            f"{len(opts.workloads)} overhead workloads ({opts.workload_iters} iterations); {opts.repeats} repetition(s); "
            f"settings {', '.join(opts.settings)} (pack: {opts.pack}); transfer folds {opts.transfer_folds}; FP training sizes {','.join(map(str, opts.fp_train_sizes))}, "
            f"{opts.fp_check_count} checked programs; {opts.workers} jobs at a time; {time.strftime('%Y-%m-%d %H:%M')}.\n")


def save_rows(path: Path, det: list[DetectionRow], fp: list[FpRow], setup: str) -> None:
    path.write_text(json.dumps({"setup": setup, "detection": [r.as_dict() for r in det],
                                "fp": [r.as_dict() for r in fp]}, indent=1))


def load_rows(path: Path) -> tuple[list[DetectionRow], list[FpRow], str]:
    data = json.loads(path.read_text())
    return ([DetectionRow(**r) for r in data["detection"]], [FpRow(**r) for r in data["fp"]], data["setup"])


def _csv_value(text: str, kind: str):
    """A CSV cell as the row field's type (the field's annotation, a string under `annotations`)."""
    if text == "" and "None" in kind:
        return None
    if kind.startswith("bool"):
        return text == "True"
    if kind.startswith("int"):
        return int(text)
    if kind.startswith("float"):
        return float(text)
    return text


def _read_csv(path: Path, row_type) -> list:
    kinds = {f.name: str(f.type) for f in fields(row_type)}
    with open(path, newline="") as f:
        return [row_type(**{k: _csv_value(v, kinds[k]) for k, v in r.items() if k in kinds}) for r in csv.DictReader(f)]


def load_csv_rows(folder: Path) -> tuple[list[DetectionRow], list[FpRow]]:
    """The rows of a result folder's detection.csv and fp.csv (fp.csv may be missing or empty)."""
    fp_csv = folder / "fp.csv"
    fp = _read_csv(fp_csv, FpRow) if fp_csv.exists() and fp_csv.stat().st_size else []
    return _read_csv(folder / "detection.csv", DetectionRow), fp


def merge_rows(folders: list[Path]) -> tuple[list[DetectionRow], list[FpRow], str]:
    """The rows of several result folders, repetitions renumbered in folder order."""
    det_all, fp_all, setups, offset = [], [], [], 0
    for folder in folders:
        det, fp, setup = load_rows(folder / ROWS_FILE)
        reps = sorted({r.rep for r in det} | {r.rep for r in fp})
        renumber = {rep: offset + i + 1 for i, rep in enumerate(reps)}
        for r in det + fp:
            r.rep = renumber[r.rep]
        det_all += det
        fp_all += fp
        setups.append(f"Repetitions {', '.join(map(str, renumber.values()))}: {setup.strip()}")
        offset += len(reps)
    return det_all, fp_all, "\n\n".join(setups) + "\n"


def culprits_of(cases) -> dict[str, tuple[str, ...]]:
    return {case.name: case.culprits for case in cases}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    if args.report_only:
        if args.csv_from:
            det, fp = load_csv_rows(args.csv_from)
            setup = f"Rebuilt from the CSV files of {args.csv_from}.\n"
        else:
            det, fp, setup = merge_rows(args.rows_from or [out])
        print(write_report(out, det, fp, setup, culprits_of(discover(args.cases_dir))))
        return 0
    try:
        cases = discover(args.cases_dir, args.cases)
    except CaseError as e:
        print(f"detection: {e}", file=sys.stderr)
        return 2
    if not cases:
        print(f"detection: no case found in {args.cases_dir}", file=sys.stderr)
        return 2
    workloads = L.workload_names() if args.workloads is None else args.workloads
    analyzers = [ours()] + ([peer(args.peer_venv.resolve())] if args.peer_venv else [])
    sizes = tuple(int(x) for x in args.fp_train_sizes.split(",") if x.strip()) if not args.no_fp else ()
    opts = Options(out=out, cases=cases, workloads=workloads, analyzers=analyzers, repeats=args.repeat,
                   workers=args.workers, transfer_folds=max(1, args.transfer_folds), fp_train_sizes=sizes,
                   fp_check_count=args.fp_check_count, workload_iters=args.workload_iters,
                   collect_time_limit=args.time_limit, analyzer_time_limit=args.time_limit,
                   peer_time_limit=args.peer_time_limit, in_process=not args.no_in_process,
                   peer_fp=not args.peer_no_fp, settings=tuple(args.settings), pack=args.pack)
    setup = setup_text(opts, args)
    if args.rerun_ours:
        previous = load_rows(out / ROWS_FILE)[2].strip() if (out / ROWS_FILE).exists() else "?"
        setup = setup.rstrip() + f" Ours re-run on the traces and original's results of: {previous}\n"
    print(setup, file=sys.stderr)
    det, fp = [], []
    for rep in range(1, args.repeat + 1):
        if args.peer_repeats is not None and rep > args.peer_repeats:
            opts.analyzers = [a for a in opts.analyzers if a.name == "ours"]
        if args.reanalyze:
            lay = L.RepLayout(out / f"rep{rep}")
            jobs = load_jobs(lay.root / JOBS_FILE)
        elif args.rerun_ours:
            lay, jobs = run_repetition(opts, rep, load_jobs(out / f"rep{rep}" / JOBS_FILE))
        else:
            lay, jobs = run_repetition(opts, rep)
        det += detection_rows(opts, rep, lay, jobs)
        if sizes:
            fp += fp_rows(opts, rep, lay, jobs)
        save_rows(out / ROWS_FILE, det, fp, setup)  # a later failure keeps what finished
    print(write_report(out, det, fp, setup, culprits_of(cases)))
    print(f"\nresults: {out / 'report.md'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
