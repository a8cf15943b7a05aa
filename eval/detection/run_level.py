"""Run-level metrics: what a user sees run by run, with no twin good run to subtract.

Recall (metrics.verdict) differences the buggy run against a good run of the same seed, which a user hunting
a bug does not have. These metrics judge each run on its own alarms (invariants it violates, at any step):

- *correct runs alarming*: correct runs (each case's third good run) that violate at least one invariant;
- *buggy runs alarming*: buggy runs that violate at least one invariant;
- *clean catches*: cases whose buggy run alarms while its correct twin (same seed) raises no alarm at all;
  *at or after the trigger*: those whose buggy run alarms at or after the case's trigger step (with a silent
  twin every buggy alarm is unique to it, so this is exactly `detected` with no alarm on the twin);
- *median alarms on a correct run*: the median number of invariants violated per correct run.

Rows that did not finish (status other than ok) count in no numerator: they are reported as not finished.
The false-positive experiment checks bug-free programs only: its run-level figures are the programs with
at least one alarm and the median number of alarms per program.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from eval.detection.results import DetectionRow, FpRow


@dataclass
class RunLevel:
    correct_alarming: int            # correct runs with >= 1 violated invariant
    buggy_alarming: int              # buggy runs with >= 1 violated invariant
    clean_catches: int               # buggy run alarms, its correct twin does not
    clean_catches_after_trigger: int # ... and the buggy run alarms at or after the trigger step
    median_alarms_correct: float | None


def _finished(rows: list[DetectionRow]) -> list[DetectionRow]:
    return [r for r in rows if r.status == "ok" and r.violated_on_bug is not None and r.violated_on_good is not None]


def run_level(rows: list[DetectionRow]) -> RunLevel:
    """The run-level metrics of one (setting, tool, check): one row per case (one repetition)."""
    done = _finished(rows)
    clean = [r for r in done if r.violated_on_bug > 0 and r.violated_on_good == 0]
    return RunLevel(
        correct_alarming=sum(1 for r in done if r.violated_on_good > 0),
        buggy_alarming=sum(1 for r in done if r.violated_on_bug > 0),
        clean_catches=len(clean),
        clean_catches_after_trigger=sum(1 for r in clean if r.detected),
        median_alarms_correct=statistics.median(r.violated_on_good for r in done) if done else None,
    )


@dataclass
class FpRunLevel:
    programs_alarming: int           # checked bug-free programs with >= 1 violated invariant
    median_alarms: float | None


def fp_run_level(rows: list[FpRow]) -> FpRunLevel:
    """The run-level metrics of one (tool, training size) of the false-positive experiment."""
    done = [r.violated for r in rows if r.status == "ok" and r.violated is not None]
    return FpRunLevel(sum(1 for v in done if v > 0), statistics.median(done) if done else None)
