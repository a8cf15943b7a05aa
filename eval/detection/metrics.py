"""What a check's results say: violated invariants with the steps they were seen at, read back from a
`failed.log` (ours or the original's, offline or online), and the per-case verdicts and rates built on them.

Definitions (eval/detection/README.md):
- a violation's step is the `meta_vars.step` of the latest record of the first violation an invariant
  reports (the step at which it became visible); records without a step give none;
- a case is *detected* when some invariant is violated on the buggy run at a step >= the trigger step and
  is not violated on the good run of the same seed; its *latency* is that first step minus the trigger step;
- the false-positive rate of a good run is the number of invariants violated on it over all invariants.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path


class ResultsError(ValueError):
    pass


@dataclass
class ViolatedInvariant:
    key: str                       # identity: relation + params (docs/formats.md §Invariant identity)
    relation: str
    text: str                      # the invariant's text_description
    steps: list[int | None] = field(default_factory=list)

    def first_step_at_or_after(self, step: int) -> int | None:
        seen = [s for s in self.steps if s is not None and s >= step]
        return min(seen) if seen else None


def invariant_key(invariant: dict) -> str:
    return invariant.get("relation", "?") + " " + json.dumps(invariant.get("params"), sort_keys=True)


def invariant_text(invariant: dict) -> str:
    return str(invariant.get("text_description") or invariant_key(invariant))


def _record_step(record: dict) -> int | None:
    step = record.get("meta_vars.step")
    if step is None and isinstance(record.get("meta_vars"), dict):
        step = record["meta_vars"].get("step")
    if isinstance(step, bool) or not isinstance(step, (int, float)) or (isinstance(step, float) and math.isnan(step)):
        return None
    return int(step)


def violation_step(result: dict) -> int | None:
    """The step of the first violation a result reports: that of its record whose time is the result's
    `detection_time` (both tools set it to the latest time among the first violation's records; our
    checker appends the records of later violations to the same result). Without it, the largest step."""
    records = [r for r in result.get("trace") or [] if isinstance(r, dict)]
    detection = result.get("detection_time")
    if isinstance(detection, (int, float)) and not isinstance(detection, bool):
        at = [s for s in (_record_step(r) for r in records if r.get("time") == detection) if s is not None]
        if at:
            return max(at)
    steps = [s for s in (_record_step(r) for r in records) if s is not None]
    return max(steps) if steps else None


def iter_json_objects(text: str, path: Path):
    """Every JSON object of a file of concatenated objects: one per line (online), or indented and
    newline-separated (the original's offline format). NaN literals are accepted, as the original writes
    them. An unreadable object is an error naming the file and line; a partial object at the end of a file
    still being written is not."""
    decoder = json.JSONDecoder()
    i, n = 0, len(text)
    while True:
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            return
        try:
            obj, i = decoder.raw_decode(text, i)
        except json.JSONDecodeError as e:
            if text.find("\n{", i) == -1 and not text.endswith("}\n"):
                return  # a trailing partial object (file still being appended to)
            line = text.count("\n", 0, i) + 1
            raise ResultsError(f"{path}:{line}: invalid JSON in results: {e.msg}") from None
        if isinstance(obj, dict):
            yield obj


def read_failed_log(path: Path) -> dict[str, ViolatedInvariant]:
    """Violated invariants of one failed.log, by identity; a missing file means no violation."""
    out: dict[str, ViolatedInvariant] = {}
    if not path.exists():
        return out
    for result in iter_json_objects(path.read_text(errors="replace"), path):
        inv = result.get("invariant")
        if not isinstance(inv, dict):
            raise ResultsError(f"{path}: a result without an 'invariant' object")
        key = invariant_key(inv)
        entry = out.setdefault(key, ViolatedInvariant(key, inv.get("relation", "?"), invariant_text(inv)))
        entry.steps.append(violation_step(result))
    return out


def count_invariants(path: Path) -> int:
    """Invariants in an invariant file (JSON Lines)."""
    return sum(1 for line in path.read_text().splitlines() if line.strip())


@dataclass
class Verdict:
    detected: bool
    latency: int | None            # first detecting step - trigger step
    first_step: int | None
    violated_on_bug: int           # invariants violated on the buggy run
    violated_on_good: int          # on the good run of the same seed
    caught_by: str                 # text_description of the invariant that caught it first
    caught_relation: str = ""

    def signature(self) -> tuple:
        """What must be equal across repetitions for the verdict to count as deterministic."""
        return (self.detected, self.latency, self.violated_on_bug, self.violated_on_good)


def verdict(bug: dict[str, ViolatedInvariant], good: dict[str, ViolatedInvariant], trigger_step: int) -> Verdict:
    best: tuple | None = None
    for key, inv in bug.items():
        if key in good:
            continue
        step = inv.first_step_at_or_after(trigger_step)
        if step is None:
            continue
        candidate = (step, inv.text, inv.relation)
        if best is None or candidate < best:
            best = candidate
    if best is None:
        return Verdict(False, None, None, len(bug), len(good), "")
    step, text, relation = best
    return Verdict(True, step - trigger_step, step, len(bug), len(good), text, relation)


def fp_rate(violated: dict[str, ViolatedInvariant], total_invariants: int) -> float:
    return len(violated) / total_invariants if total_invariants else 0.0
