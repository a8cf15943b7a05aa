"""Analysis of the overhead evaluation: per-iteration time ratios of each method against `naive`.

Entry points: `compute_overheads` (results in memory -> rows), `load_results` / `write_csv` /
`format_table` (files and console). Everything but the small read/write helpers is a pure function.

Method, as in the paper's analysis script: for one workload, the per-iteration times of a method and of
`naive` are aligned by iteration index (iteration i of the method against iteration i of naive, up to the
shorter of the two), the first `warmup` iterations are dropped, and the overhead is the mean of the
per-iteration ratios, reported with their (population) standard deviation. A method stopped by its time
limit may have completed fewer iterations than the warm-up: then only its last completed iteration is
used, the one least affected by warm-up.

Raw result files are `e2e_<workload>_<method>.txt`, one iteration time in seconds per line. Workload names
must not contain `_`; method names may contain `-` (`monkey-patch`).
"""
from __future__ import annotations

import csv
import math
import statistics
from dataclasses import dataclass
from pathlib import Path

from eval.perf_overhead.memory_budget import budget_footnote

BASELINE = "naive"
# Plot and table order; methods not listed here come after these, alphabetically.
METHOD_ORDER = ("settrace", "monkey-patch", "monkey-patch-descriptors", "selective", "default", "peer-monkey-patch",
                "peer-selective")
CSV_COLUMNS = ("task", "method", "overhead", "std")  # what old readers know; the memory ones follow
MEMORY_CSV_COLUMNS = ("peak_rss_mb", "naive_peak_rss_mb", "peak_rss_ratio", "rss_growth_mb_per_iter",
                      "naive_rss_growth_mb_per_iter", "memory_over_budget")


@dataclass(frozen=True)
class OverheadRow:
    task: str
    method: str
    overhead: float  # mean per-iteration ratio against naive
    std: float  # population standard deviation of those ratios
    n: int  # number of ratios averaged (0 when read back from a CSV that does not say)
    # Memory (memory_analysis.py): NaN where not measured (an old CSV, a run without a peak).
    peak_rss_mb: float = math.nan  # median over the runs of the peak RSS (ru_maxrss)
    naive_peak_rss_mb: float = math.nan
    rss_growth_mb_per_iter: float = math.nan  # median over the runs; NaN where the workload does not say
    naive_rss_growth_mb_per_iter: float = math.nan
    memory_over_budget: bool = False  # over memory_budget.py's budget, or a run stopped by the RSS limit
    rss_limited: bool = False  # a run was stopped by the RSS limit: its peak is a lower bound

    @property
    def peak_rss_ratio(self) -> float:
        if math.isnan(self.peak_rss_mb) or not self.naive_peak_rss_mb > 0:
            return math.nan
        return self.peak_rss_mb / self.naive_peak_rss_mb


def parse_iteration_times(text: str) -> list[float]:
    """Iteration times from a file's text. A last line without its newline is ignored: the process was
    killed while writing it, so the number may be cut short. Blank lines are skipped."""
    lines = text.split("\n")
    complete = lines[:-1]  # the piece after the last newline is either "" or an unfinished line
    return [float(line) for line in complete if line.strip()]


def read_iteration_times(path: str | Path) -> list[float]:
    return parse_iteration_times(Path(path).read_text())


def merge_repeats(runs: list[list[float]]) -> list[float]:
    """Per-iteration median over repeated runs of one method: entry i is the median of the runs that
    completed iteration i. Repeated runs smooth out machine noise without breaking the alignment by
    iteration index."""
    length = max((len(run) for run in runs), default=0)
    merged = []
    for i in range(length):
        values = [run[i] for run in runs if len(run) > i]
        merged.append(statistics.median(values))
    return merged


def analysed_range(length: int, warmup: int) -> range:
    """Indices used for a series of `length` aligned iterations (see the module doc)."""
    if length <= 0:
        return range(0)
    if length > warmup:
        return range(warmup, length)
    return range(length - 1, length)


def aligned_ratios(times: list[float], baseline: list[float], warmup: int) -> list[float]:
    """Per-iteration ratios times[i] / baseline[i] over the analysed range of the common length."""
    length = min(len(times), len(baseline))
    return [times[i] / baseline[i] for i in analysed_range(length, warmup) if baseline[i] > 0]


def mean_std(values: list[float]) -> tuple[float, float]:
    """Mean and population standard deviation (numpy's default, as the paper's analysis used)."""
    if not values:
        return math.nan, math.nan
    return statistics.fmean(values), statistics.pstdev(values)


def method_sort_key(method: str) -> tuple[int, str]:
    if method in METHOD_ORDER:
        return METHOD_ORDER.index(method), method
    return len(METHOD_ORDER), method


def compute_overheads(results: dict[str, dict[str, list[float]]], warmup: int,
                      task_order: list[str] | None = None) -> list[OverheadRow]:
    """One row per (task, non-baseline method) with at least one aligned iteration.

    `results[task][method]` is the list of iteration times. Tasks without a baseline are skipped (there
    is nothing to compare with). Rows are ordered by `task_order` (then alphabetically for the rest) and
    by `METHOD_ORDER`."""
    order = list(task_order or [])
    tasks = [t for t in order if t in results] + sorted(t for t in results if t not in order)
    rows = []
    for task in tasks:
        methods = results[task]
        baseline = methods.get(BASELINE)
        if not baseline:
            continue
        for method in sorted(methods, key=method_sort_key):
            if method == BASELINE:
                continue
            ratios = aligned_ratios(methods[method], baseline, warmup)
            if not ratios:
                continue
            overhead, std = mean_std(ratios)
            rows.append(OverheadRow(task, method, overhead, std, len(ratios)))
    return rows


def result_file_name(task: str, method: str) -> str:
    if "_" in task:
        raise ValueError(f"workload name {task!r} must not contain '_' (it separates the file name's fields)")
    return f"e2e_{task}_{method}.txt"


def parse_result_file_name(name: str) -> tuple[str, str] | None:
    """(task, method) of `e2e_<task>_<method>.txt`, or None for any other file name."""
    if not (name.startswith("e2e_") and name.endswith(".txt")):
        return None
    task, sep, method = name[len("e2e_"):-len(".txt")].partition("_")
    if not sep or not task or not method:
        return None
    return task, method


def load_results(res_dir: str | Path) -> dict[str, dict[str, list[float]]]:
    results: dict[str, dict[str, list[float]]] = {}
    for path in sorted(Path(res_dir).glob("e2e_*.txt")):
        parsed = parse_result_file_name(path.name)
        if parsed is None:
            continue
        task, method = parsed
        results.setdefault(task, {})[method] = read_iteration_times(path)
    return results


def write_csv(rows: list[OverheadRow], path: str | Path) -> None:
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(CSV_COLUMNS + MEMORY_CSV_COLUMNS)
        for row in rows:
            writer.writerow([row.task, row.method, f"{row.overhead:.4f}", f"{row.std:.4f}",
                             format_optional(row.peak_rss_mb, 1), format_optional(row.naive_peak_rss_mb, 1),
                             format_optional(row.peak_rss_ratio, 4), format_optional(row.rss_growth_mb_per_iter, 3),
                             format_optional(row.naive_rss_growth_mb_per_iter, 3),
                             int(row.memory_over_budget)])


def format_optional(value: float, digits: int) -> str:
    """A number with `digits` decimals, or "" for NaN (not measured)."""
    return "" if math.isnan(value) else f"{value:.{digits}f}"


def parse_optional(text: str | None) -> float:
    return float(text) if text not in (None, "") else math.nan


def read_csv(path: str | Path) -> list[OverheadRow]:
    """Rows of an overhead_e2e.csv, with or without the memory columns (older files have none)."""
    with open(path, newline="") as f:
        return [OverheadRow(r["task"], r["method"], float(r["overhead"]), float(r["std"]), 0,
                            parse_optional(r.get("peak_rss_mb")), parse_optional(r.get("naive_peak_rss_mb")),
                            parse_optional(r.get("rss_growth_mb_per_iter")),
                            parse_optional(r.get("naive_rss_growth_mb_per_iter")),
                            r.get("memory_over_budget") == "1")
                for r in csv.DictReader(f)]


def format_table(rows: list[OverheadRow]) -> str:
    """A fixed-width console table: one line per workload, one `overhead ± std (n)` column per method;
    where peak RSS was measured, then naive's peak (MB) and one `RSS` column per method with the peak-RSS
    ratio to naive, `!` marking a method out of the memory budget (footnote below the table)."""
    if not rows:
        return "(no overhead results)"
    tasks = list(dict.fromkeys(row.task for row in rows))
    methods = sorted({row.method for row in rows}, key=method_sort_key)
    cell = {(row.task, row.method): row for row in rows}
    with_memory = any(not math.isnan(row.peak_rss_mb) for row in rows)

    def fmt(row: OverheadRow | None) -> str:
        if row is None or math.isnan(row.overhead):
            return "-"
        text = f"{row.overhead:.3g}x ± {row.std:.2g}"
        return f"{text} ({row.n})" if row.n else text

    def fmt_memory(row: OverheadRow | None) -> str:
        if row is None or math.isnan(row.peak_rss_ratio):
            return "-"
        text = (">" if row.rss_limited else "") + f"{row.peak_rss_ratio:.3g}x"
        if not math.isnan(row.rss_growth_mb_per_iter):
            text += f" {row.rss_growth_mb_per_iter:+.2g}/it"
        return text + (" !" if row.memory_over_budget else "")

    def naive_peak(task: str) -> str:
        peaks = [cell[(task, m)].naive_peak_rss_mb for m in methods if (task, m) in cell]
        peaks = [p for p in peaks if not math.isnan(p)]
        return f"{peaks[0]:.0f}" if peaks else "-"

    header = ["workload", *methods]
    if with_memory:
        header += ["naive MB", *(f"{m} RSS" for m in methods)]
    table = [header]
    for t in tasks:
        line = [t, *(fmt(cell.get((t, m))) for m in methods)]
        if with_memory:
            line += [naive_peak(t), *(fmt_memory(cell.get((t, m))) for m in methods)]
        table.append(line)
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    lines = ["  ".join(text.ljust(w) for text, w in zip(line, widths)).rstrip() for line in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    if with_memory:
        lines.append(budget_footnote(any(row.memory_over_budget for row in rows)))
    return "\n".join(lines)
