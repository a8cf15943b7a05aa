"""Reads a traincheck-check / traincheck-onlinecheck output folder into what the sinks log.

Only reading: labels, counts and steps were decided by the C++ checker and are taken from its files
(failed.log entries carry `display_name`; violations_summary.json the per-invariant rows)."""
import json
import os
from dataclasses import dataclass, field

RELATION_COUNTS = ("failed", "passed", "not_triggered")


def read_entries(path: str) -> list[dict]:
    """The entries of a failed/passed/not_triggered.log: indent-4 objects (offline) or one per line (online).
    Split where a line starts with '{', as the original reads them; a torn last entry is left out."""
    if not os.path.exists(path):
        return []
    entries, current = [], []

    def close():
        text = "".join(current).strip()
        if text:
            try:
                entries.append(json.loads(text))
            except json.JSONDecodeError:
                pass  # the online checker may be mid-append; the entry is read on the next pass

    with open(path) as f:
        for line in f:
            if line.startswith("{") and current:
                close()
                current = []
            current.append(line)
    close()
    return entries


def entry_steps(entry: dict) -> list[tuple[int, str | None]]:
    """(step, stage) of each violating record of an entry that has a step."""
    out = []
    for record in entry.get("trace") or []:
        if isinstance(record, dict) and isinstance(record.get("meta_vars.step"), int):
            stage = record.get("meta_vars.stage")
            out.append((record["meta_vars.step"], stage if isinstance(stage, str) else None))
    return out


def entry_label(entry: dict) -> str:
    inv = entry.get("invariant") or {}
    return entry.get("display_name") or inv.get("text_description") or inv.get("relation", "")


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


def _relation_of(entry: dict) -> str:
    return (entry.get("invariant") or {}).get("relation", "")


def _violation_rows(trace: str, failed: list[dict], group_key) -> tuple[list, dict]:
    """Violations table rows and step counts of one trace's failed entries, grouped by invariant."""
    groups: dict = {}
    for e in failed:
        groups.setdefault(group_key(e), []).append(e)
    rows, step_invariants = [], {}
    for key, entries in groups.items():
        steps = sorted(s for e in entries for s in entry_steps(e))
        for step, _ in steps:
            step_invariants.setdefault(step, set()).add(key)
        first = steps[0] if steps else (None, None)
        last = max(steps, key=lambda s: s[0]) if steps else (None, None)
        occurrences = sum(int(e.get("violation_count") or 1) for e in entries)
        rows.append(Violation(trace, entry_label(entries[0]), _relation_of(entries[0]), occurrences, first[0], first[1], last[0], last[1]))
    rows.sort(key=lambda v: (v.first_step is None, v.first_step or 0, -v.occurrences, v.invariant))
    return rows, {s: len(k) for s, k in step_invariants.items()}


def _merge_counts(total: dict, more: dict):
    for step, n in more.items():
        total[step] = total.get(step, 0) + n


def _note_summary_file(res: Results, folder: str):
    summary = os.path.join(folder, "violations_summary.json")
    if os.path.exists(summary):
        res.summary_files.append(summary)


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
    """traincheck-check's folder: <out>/<trace>/{failed,passed,not_triggered}.log and violations_summary.json."""
    res = Results("offline", out, count_invariants(os.path.join(out, "invariants.json")))
    for name in sorted(os.listdir(out)):
        trace_dir = os.path.join(out, name)
        if not os.path.isfile(os.path.join(trace_dir, "failed.log")):
            continue
        logs = {k: read_entries(os.path.join(trace_dir, f"{k}.log")) for k in RELATION_COUNTS}
        for kind, entries in logs.items():
            res.checks[kind] += len(entries)
            res.checks["total"] += len(entries)
            for e in entries:
                counts = res.relations.setdefault(_relation_of(e), dict.fromkeys(RELATION_COUNTS, 0))
                counts[kind] += 1
        # One entry per violated invariant offline.
        rows, steps = _violation_rows(name, logs["failed"], lambda e: id(e))
        res.violations += rows
        res.violations_total += sum(v.occurrences for v in rows)
        _merge_counts(res.step_counts, steps)
        _note_summary_file(res, trace_dir)
    _note_report(res, out)
    return res


def online_invariant_key(entry: dict) -> str:
    return json.dumps(entry.get("invariant"), sort_keys=True)


def read_online(out: str) -> Results:
    """traincheck-onlinecheck's folder: <out>/failed.log (one line per violation), violations_summary.json
    (written at stop), invariants.json, report.html. Online there is no passed/not_triggered log."""
    res = Results("online", out, count_invariants(os.path.join(out, "invariants.json")))
    failed = read_entries(os.path.join(out, "failed.log"))
    rows, steps = _violation_rows("", failed, online_invariant_key)
    res.violations = rows
    res.violations_total = len(failed)
    res.step_counts = steps
    for v in rows:
        res.relations.setdefault(v.relation, dict.fromkeys(RELATION_COUNTS, 0))["failed"] += 1
    res.checks["failed"] = len(rows)
    _note_summary_file(res, out)
    _note_report(res, out)
    return res


def read_results(out: str, mode: str) -> Results:
    return read_offline(out) if mode == "offline" else read_online(out)
