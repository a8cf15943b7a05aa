"""Reads a traincheck-check / traincheck-onlinecheck output folder into what the sinks log.

Only reading: labels, counts and steps were decided by the C++ checker and are taken from its files
(failed.log entries carry `display_name`; violations_summary.json the per-invariant rows)."""
import itertools
import json
import os
from dataclasses import dataclass, field

RELATION_COUNTS = ("failed", "passed", "not_triggered")


def iter_entries(path: str):
    """The entries of a failed/passed/not_triggered.log, one at a time (the log may be larger than memory):
    indent-4 objects (offline) or one per line (online). Split where a line starts with '{', as the
    original reads them; a torn last entry is left out."""
    if not os.path.exists(path):
        return
    current: list[str] = []

    def parsed():
        text = "".join(current).strip()
        if text:
            try:
                return json.loads(text)
            except json.JSONDecodeError:
                pass  # the online checker may be mid-append; the entry is read on the next pass
        return None

    with open(path) as f:
        for line in f:
            if line.startswith("{") and current:
                entry = parsed()
                if entry is not None:
                    yield entry
                current = []
            current.append(line)
    entry = parsed()
    if entry is not None:
        yield entry


def read_entries(path: str) -> list[dict]:
    """Every entry of a log, in memory: for small logs (tests); the sinks stream with iter_entries."""
    return list(iter_entries(path))


def entry_steps(entry: dict) -> list[tuple[int, str | None]]:
    """(step, stage) of each violating record of an entry that has a step."""
    out = []
    for record in entry.get("trace") or []:
        if isinstance(record, dict) and isinstance(record.get("meta_vars.step"), int):
            stage = record.get("meta_vars.stage")
            out.append((record["meta_vars.step"], stage if isinstance(stage, str) else None))
    return out


def entry_label(entry: dict) -> str:
    """The label the C++ checker wrote (`display_name`, from invariant_label in cpp/invariant/relation.h);
    an entry without one (the original's failed.log) falls back as that function does, then to the
    relation's name."""
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


def _stage_order(stage):
    return (stage is not None, stage or "")


def _violation_rows(trace: str, failed, group_key) -> tuple[list, dict, int]:
    """Violations table rows, step counts and the number of entries of one trace's failed entries
    (an iterable, read once), grouped by invariant. Memory: one row per invariant and one key reference
    per (step, invariant), never the entries themselves."""
    groups: dict = {}  # key -> [label, relation, first (step, stage), last (step, stage), occurrences, key]
    step_invariants: dict = {}
    entries = 0
    for e in failed:
        entries += 1
        key = group_key(e)
        group = groups.get(key)
        if group is None:
            group = groups[key] = [entry_label(e), _relation_of(e), None, None, 0, key]
        key = group[5]  # the first key object: the step sets share it rather than holding a copy per entry
        group[4] += int(e.get("violation_count") or 1)
        for step, stage in entry_steps(e):
            step_invariants.setdefault(step, set()).add(key)
            if group[2] is None or (step, _stage_order(stage)) < (group[2][0], _stage_order(group[2][1])):
                group[2] = (step, stage)
            if group[3] is None or step > group[3][0] or (step == group[3][0] and _stage_order(stage) < _stage_order(group[3][1])):
                group[3] = (step, stage)
    rows = []
    for label, relation, first, last, occurrences, _ in groups.values():
        first, last = first or (None, None), last or (None, None)
        rows.append(Violation(trace, label, relation, occurrences, first[0], first[1], last[0], last[1]))
    rows.sort(key=lambda v: (v.first_step is None, v.first_step or 0, -v.occurrences, v.invariant))
    return rows, {s: len(k) for s, k in step_invariants.items()}, entries


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

        def counted(kind):
            for e in iter_entries(os.path.join(trace_dir, f"{kind}.log")):
                res.checks[kind] += 1
                res.checks["total"] += 1
                res.relations.setdefault(_relation_of(e), dict.fromkeys(RELATION_COUNTS, 0))[kind] += 1
                yield e

        # One entry per violated invariant offline: each entry is its own group.
        numbered = itertools.count()
        rows, steps, _ = _violation_rows(name, counted("failed"), lambda e: next(numbered))
        for kind in RELATION_COUNTS[1:]:
            for _ in counted(kind):
                pass
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
    rows, steps, entries = _violation_rows("", iter_entries(os.path.join(out, "failed.log")), online_invariant_key)
    res.violations = rows
    res.violations_total = entries
    res.step_counts = steps
    for v in rows:
        res.relations.setdefault(v.relation, dict.fromkeys(RELATION_COUNTS, 0))["failed"] += 1
    res.checks["failed"] = len(rows)
    _note_summary_file(res, out)
    _note_report(res, out)
    return res


def read_results(out: str, mode: str) -> Results:
    return read_offline(out) if mode == "offline" else read_online(out)
