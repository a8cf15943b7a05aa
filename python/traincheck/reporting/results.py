"""Reads a traincheck-check / traincheck-onlinecheck output folder into what the sinks log.

Only reading: rows, counts and steps were decided by the C++ checker and are taken from its
violations_summary.json (cpp/check/result_writer.h); while a live check runs, it hands the exporter its
per-step counts itself (export.py)."""
import json
import os
from dataclasses import dataclass, field

RELATION_COUNTS = ("failed", "passed", "not_triggered")


@dataclass
class Violation:
    """One violated invariant of one trace: a row of the violations table."""
    trace: str
    invariant: str
    relation: str
    occurrences: int
    first_step: int | None = None
    first_stage: str | None = None
    last_step: int | None = None
    last_stage: str | None = None


@dataclass
class Results:
    mode: str
    output_dir: str
    invariants_total: int = 0
    checks: dict = field(default_factory=lambda: {"total": 0, "failed": 0, "passed": 0, "not_triggered": 0})
    relations: dict = field(default_factory=dict)  # relation -> {failed, passed, not_triggered}
    violations: list = field(default_factory=list)  # Violation
    step_counts: dict = field(default_factory=dict)  # step -> distinct invariants violated at it (all traces)
    violations_total: int = 0
    report_html: str | None = None
    summary_files: list = field(default_factory=list)

    @property
    def first_step(self):
        steps = [v.first_step for v in self.violations if v.first_step is not None]
        return min(steps) if steps else None

    @property
    def last_step(self):
        steps = [v.last_step for v in self.violations if v.last_step is not None]
        return max(steps) if steps else None


def count_invariants(path: str) -> int:
    if not os.path.exists(path):
        return 0
    with open(path) as f:
        return sum(1 for line in f if line.strip())


def read_summary(folder: str) -> dict | None:
    """violations_summary.json of a checked trace (offline) or run (online); None when absent or torn
    (a checker that did not stop normally)."""
    path = os.path.join(folder, "violations_summary.json")
    try:
        with open(path) as f:
            summary = json.load(f)
    except (OSError, json.JSONDecodeError):
        return None
    return summary if isinstance(summary, dict) else None


def _add_summary(res: Results, trace: str, folder: str, summary: dict) -> None:
    """A summary's rows, as the checker sorted them, and its per-step counts, added to `res`."""
    for row in summary.get("violations", []):
        res.violations.append(Violation(trace, row.get("display_name", ""), row.get("relation_type", ""),
                                        row.get("occurrences", 0), row.get("first_step"), row.get("first_stage"),
                                        row.get("last_step"), row.get("last_stage")))
        res.violations_total += row.get("occurrences", 0)
    for at in summary.get("invariants_violated_per_step", []):
        res.step_counts[at["step"]] = res.step_counts.get(at["step"], 0) + at["invariants"]
    res.summary_files.append(os.path.join(folder, "violations_summary.json"))


def _note_report(res: Results, out: str):
    html = os.path.join(out, "report.html")
    res.report_html = html if os.path.exists(html) else None


def totals(res: Results) -> dict:
    """The run's totals under neutral names; each sink renames them as the original's does
    (TOTAL_NAMES in the sink): invariants, violations, distinct invariants violated, first and last
    violating step, and offline the check counts and pass rate."""
    out = {"invariants_total": res.invariants_total, "violations_total": res.violations_total,
           "distinct_invariants_violated": len(res.violations)}
    if res.mode == "offline":
        checks = res.checks
        out.update({f"checks_{k}": v for k, v in checks.items()})
        out["pass_rate_pct"] = round(100.0 * checks["passed"] / checks["total"], 1) if checks["total"] else 0.0
    if res.first_step is not None:
        out["first_step"] = res.first_step
        out["last_step"] = res.last_step
    return out


def renamed(values: dict, names: dict, prefix: str = "") -> dict:
    """`values` with each key replaced by names.get(key, key), then prefixed."""
    return {prefix + names.get(k, k): v for k, v in values.items()}


def read_offline(out: str) -> Results:
    """traincheck-check's folder: each <out>/<trace>/violations_summary.json (rows, per-step counts and the
    invariants failed / passed / not triggered per relation, all decided by the checker)."""
    res = Results("offline", out, count_invariants(os.path.join(out, "invariants.json")))
    for name in sorted(os.listdir(out)):
        trace_dir = os.path.join(out, name)
        summary = read_summary(trace_dir) if os.path.isdir(trace_dir) else None
        if summary is None:
            continue
        _add_summary(res, name, trace_dir, summary)
        checks = summary.get("checks", {})
        for kind in RELATION_COUNTS:
            n = checks.get("total", {}).get(kind, 0)
            res.checks[kind] += n
            res.checks["total"] += n
        for relation, counts in checks.get("by_relation", {}).items():
            into = res.relations.setdefault(relation, dict.fromkeys(RELATION_COUNTS, 0))
            for kind in RELATION_COUNTS:
                into[kind] += counts.get(kind, 0)
    _note_report(res, out)
    return res


def read_online(out: str) -> Results:
    """traincheck-onlinecheck's folder: <out>/violations_summary.json (written at stop), invariants.json,
    report.html. Online there is no passed/not_triggered log: the relations count their violated
    invariants. A checker that did not stop normally left no summary: the results are empty (failed.log
    still holds what it found)."""
    res = Results("online", out, count_invariants(os.path.join(out, "invariants.json")))
    summary = read_summary(out)
    if summary is not None:
        _add_summary(res, "", out, summary)
    for v in res.violations:
        res.relations.setdefault(v.relation, dict.fromkeys(RELATION_COUNTS, 0))["failed"] += 1
    res.checks["failed"] = len(res.violations)
    _note_report(res, out)
    return res


def read_results(out: str, mode: str) -> Results:
    return read_offline(out) if mode == "offline" else read_online(out)
