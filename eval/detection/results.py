"""Rows of the result tables, read back from one repetition's folders: one detection row per (case,
setting, analyzer, mode) and one false-positive row per (analyzer, training size, checked program)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from eval.detection import layout as L
from eval.detection.cases import Case
from eval.detection.jobs import Job
from eval.detection.metrics import count_invariants, fp_rate, read_failed_log, verdict
from eval.detection.pipeline import Options, RepJobs, case_invariant_key, runs_to_collect, tool_runs_setting
from eval.detection.tools import OURS, Analyzer

OFFLINE = "offline"
IN_PROCESS = "in-process"


@dataclass
class DetectionRow:
    rep: int
    case: str
    bug_class: str
    setting: str                   # same | transfer
    tool: str                      # ours | original
    mode: str                      # offline | in-process
    status: str                    # ok, or which step failed / hit its time limit
    invariants: int | None = None
    detected: bool | None = None
    trigger_step: int | None = None
    first_step: int | None = None
    latency: int | None = None
    violated_on_bug: int | None = None
    violated_on_good: int | None = None
    caught_by: str = ""
    caught_relation: str = ""
    infer_seconds: float | None = None
    check_seconds: float | None = None     # the whole check of this invariant file (other cases' traces too)
    invariant_file: str = ""               # which inference the row's invariants come from (setting/key)

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class FpRow:
    rep: int
    tool: str
    train_size: int
    program: str
    status: str
    invariants: int | None = None
    violated: int | None = None
    fp_rate: float | None = None
    infer_seconds: float | None = None

    def as_dict(self) -> dict:
        return asdict(self)


def _first_problem(steps: list[tuple[str, Job | None]]) -> str | None:
    for name, job in steps:
        if job is None:
            return f"{name}: not run"
        if not job.ok:
            return f"{name}: {job.status}"
    return None


def _collect_job(jobs: RepJobs, lay: L.RepLayout, case: Case, run_name: str) -> Job | None:
    target = str(lay.run(case, run_name))
    return next((j for j in jobs.collect if target in j.command), None)


def detection_rows(opts: Options, rep: int, lay: L.RepLayout, jobs: RepJobs) -> list[DetectionRow]:
    rows = []
    for case in opts.cases:
        collects = [(f"collect {r}", _collect_job(jobs, lay, case, r)) for r in runs_to_collect(opts)]
        for setting in opts.settings:
            key = case_invariant_key(opts, setting, case)
            for tool in (t for t in opts.analyzers if tool_runs_setting(t.name, setting)):
                infer = jobs.infer.get((tool.name, setting, key))
                check = jobs.check.get((tool.name, setting, key))
                row = DetectionRow(rep, case.name, case.bug_class, setting, tool.name, OFFLINE, "ok",
                                   trigger_step=case.trigger_step, invariant_file=f"{setting}/{key}")
                problem = _first_problem(collects + [("infer", infer), ("check", check)])
                inv_file = lay.invariants(tool.name, setting, key)
                if infer is not None:
                    row.infer_seconds = round(infer.seconds, 2)
                    if infer.ok:
                        row.invariants = count_invariants(inv_file)
                if problem is None:
                    rows.append(_fill(row, case, tool, setting, key, lay, check))
                    continue
                row.status = problem
                rows.append(row)
            if any(t.name == OURS for t in opts.analyzers) and opts.in_process:
                rows.append(_in_process_row(opts, rep, case, setting, key, lay, jobs))
    return rows


def _fill(row: DetectionRow, case: Case, tool: Analyzer, setting: str, key: str, lay: L.RepLayout,
          check: Job) -> DetectionRow:
    logs = {r: Analyzer.failed_log(lay.check_dir(tool.name, setting, key), lay.run(case, r)) for r in ("bug_s3", "good_s3")}
    _apply_verdict(row, logs["bug_s3"], logs["good_s3"], case.trigger_step)
    row.check_seconds = round(check.seconds, 2)  # the whole check job (all traces of this invariant file)
    return row


def _apply_verdict(row: DetectionRow, bug_log: Path, good_log: Path, trigger_step: int) -> None:
    """Fills a row's verdict from the failed.log of the buggy run and of the good run (offline or online)."""
    v = verdict(read_failed_log(bug_log), read_failed_log(good_log), trigger_step)
    row.detected, row.first_step, row.latency = v.detected, v.first_step, v.latency
    row.violated_on_bug, row.violated_on_good = v.violated_on_bug, v.violated_on_good
    row.caught_by, row.caught_relation = v.caught_by, v.caught_relation


def _in_process_row(opts: Options, rep: int, case: Case, setting: str, key: str, lay: L.RepLayout,
                    jobs: RepJobs) -> DetectionRow:
    row = DetectionRow(rep, case.name, case.bug_class, setting, OURS, IN_PROCESS, "ok", trigger_step=case.trigger_step,
                       invariant_file=f"{setting}/{key}")
    infer = jobs.infer.get((OURS, setting, key))
    runs = {r: jobs.online.get((setting, case.name, r)) for r in ("bug_s3", "good_s3")}
    problem = _first_problem([("infer", infer)] + [(f"in-process {r}", j) for r, j in runs.items()])
    if infer is not None and infer.ok:
        row.invariants = count_invariants(lay.invariants(OURS, setting, key))
    if problem is not None:
        row.status = problem
        return row
    logs = {r: lay.online_run(setting, case, r) / "online_check" / "failed.log" for r in runs}
    _apply_verdict(row, logs["bug_s3"], logs["good_s3"], case.trigger_step)
    row.check_seconds = round(sum(j.seconds for j in runs.values()), 2)
    return row


def fp_rows(opts: Options, rep: int, lay: L.RepLayout, jobs: RepJobs) -> list[FpRow]:
    programs = lay.programs(opts.cases, opts.workloads)
    split = L.fp_split(programs, opts.fp_train_sizes, opts.fp_check_count)
    rows = []
    for tool in opts.analyzers:
        for k in split.train_sizes:
            infer = jobs.infer.get((tool.name, "fp", f"k{k}"))
            check = jobs.check.get((tool.name, "fp", f"k{k}"))
            if infer is None:
                continue  # not scheduled (--peer-no-fp): no rows, rather than rows that failed
            for prog in split.check:
                row = FpRow(rep, tool.name, k, prog.name, "ok")
                if infer is not None:
                    row.infer_seconds = round(infer.seconds, 2)
                problem = _first_problem([("infer", infer), ("check", check)])
                if problem is not None:
                    row.status = problem
                    rows.append(row)
                    continue
                row.invariants = count_invariants(lay.invariants(tool.name, "fp", f"k{k}"))
                violated = read_failed_log(Analyzer.failed_log(lay.check_dir(tool.name, "fp", f"k{k}"), prog.check_trace))
                row.violated = len(violated)
                row.fp_rate = fp_rate(violated, row.invariants)
                rows.append(row)
    return rows
