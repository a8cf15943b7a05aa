"""Peak memory of the overhead evaluation: per workload and method, the peak resident set against naive's
and the resident set's growth per iteration, from the runs' manifest (`runs.csv`).

Entry points: `compute_memory` (manifest rows -> figures per (workload, method)), `attach_memory` (adds
them to the time rows of analysis.py), `rss_growth_per_iteration` (one run's VmRSS series -> MB per
iteration). Pure functions but `read_manifest`.

Figures: a method's peak is the median over its runs of each run's peak RSS (ru_maxrss of the run's
process and the descendants it waited for, run.py); the ratio divides it by naive's. Runs that failed are
left out; a run stopped by the RSS limit counts, its peak then a lower bound (shown as `>`). A method is
out of the memory budget when its peak exceeds BUDGET_FACTOR x naive's + BUDGET_MB, or when a run of it
was stopped by the RSS limit (the rule: memory_budget.py).
"""
from __future__ import annotations

import csv
import dataclasses
import math
import statistics
from pathlib import Path

from eval.perf_overhead.analysis import BASELINE, OverheadRow, method_sort_key, parse_optional
# The budget rule; its names are re-exported here, where the figures it judges are computed.
from eval.perf_overhead.memory_budget import BUDGET_FACTOR, BUDGET_MB, budget_footnote, over_budget  # noqa: F401

MANIFEST_MEMORY_COLUMNS = ("peak_rss_mb", "rss_growth_mb_per_iter")
COUNTED_STATUSES = ("ok", "time limit", "rss limit")


@dataclasses.dataclass(frozen=True)
class MemoryFigure:
    peak_rss_mb: float  # median over the counted runs
    growth_mb_per_iter: float  # median over the runs that wrote a VmRSS series; NaN if none
    rss_limited: bool  # a run was stopped by the RSS limit


def rss_growth_per_iteration(rss_mb: list[float]) -> float:
    """Least-squares slope (MB per iteration) of a run's VmRSS series over its second half, where the
    allocator's warm-up is over; NaN under 4 points in that half."""
    half = rss_mb[len(rss_mb) // 2:]
    if len(half) < 4:
        return math.nan
    xs = range(len(half))
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(half)
    sxx = sum((x - mean_x) ** 2 for x in xs)
    return sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, half)) / sxx


def read_manifest(path: str | Path) -> list[dict[str, str]]:
    path = Path(path)
    if not path.is_file():
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def compute_memory(manifest: list[dict[str, str]]) -> dict[tuple[str, str], MemoryFigure]:
    """Per (workload, method), naive included, the memory figures of its counted runs with a peak."""
    peaks: dict[tuple[str, str], list[float]] = {}
    growths: dict[tuple[str, str], list[float]] = {}
    limited: set[tuple[str, str]] = set()
    for run in manifest:
        if run.get("status") not in COUNTED_STATUSES:
            continue
        key = (run["workload"], run["method"])
        peak = parse_optional(run.get("peak_rss_mb"))
        if math.isnan(peak):
            continue
        peaks.setdefault(key, []).append(peak)
        growth = parse_optional(run.get("rss_growth_mb_per_iter"))
        if not math.isnan(growth):
            growths.setdefault(key, []).append(growth)
        if run["status"] == "rss limit":
            limited.add(key)
    return {key: MemoryFigure(statistics.median(values),
                              statistics.median(growths[key]) if key in growths else math.nan,
                              key in limited)
            for key, values in peaks.items()}


def attach_memory(rows: list[OverheadRow], memory: dict[tuple[str, str], MemoryFigure]) -> list[OverheadRow]:
    """The time rows with their memory figures; a (workload, method) with memory figures and a naive peak
    but no time ratio (stopped before its first compared iteration, say by the RSS limit) gets a row
    with NaN time, so that its memory still shows."""
    by_key = {(row.task, row.method): row for row in rows}
    tasks = list(dict.fromkeys(row.task for row in rows))
    for task, method in sorted(memory, key=lambda k: method_sort_key(k[1])):
        if method != BASELINE and (task, BASELINE) in memory and (task, method) not in by_key:
            by_key[(task, method)] = OverheadRow(task, method, math.nan, math.nan, 0)
            if task not in tasks:
                tasks.append(task)
    result = []
    for task in tasks:
        naive = memory.get((task, BASELINE))
        for method in sorted((m for t, m in by_key if t == task), key=method_sort_key):
            row, figure = by_key[(task, method)], memory.get((task, method))
            if figure is None or naive is None:
                result.append(row)
                continue
            result.append(dataclasses.replace(
                row, peak_rss_mb=figure.peak_rss_mb, naive_peak_rss_mb=naive.peak_rss_mb,
                rss_growth_mb_per_iter=figure.growth_mb_per_iter,
                naive_rss_growth_mb_per_iter=naive.growth_mb_per_iter, rss_limited=figure.rss_limited,
                memory_over_budget=figure.rss_limited or over_budget(figure.peak_rss_mb, naive.peak_rss_mb)))
    return result
