"""The overhead figure (the paper's Figure 7): grouped bars per workload, log-scale y axis; below it, where
peak RSS was measured, a second panel with the peak-RSS ratio to naive (hatched bars: out of the memory
budget, memory_budget.py).

Entry point: `plot_overheads(rows, out_stem)` writes `<out_stem>.pdf` and `<out_stem>.png`. It can also be
run on a finished results folder: `python -m eval.perf_overhead.plot perf_res` (reads overhead_e2e.csv).
"""
from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make the `eval.perf_overhead` package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import math

from eval.perf_overhead.analysis import METHOD_ORDER, OverheadRow, method_sort_key, read_csv

LABELS = {
    "settrace": "settrace",
    "monkey-patch": "mpatch",
    "monkey-patch-descriptors": "mpatch + descriptors",
    "selective": "selective",
    "default": "default (mpatch + pack)",
    "peer-monkey-patch": "peer mpatch",
    "peer-selective": "peer selective",
}
COLORS = {
    "settrace": "#8c8c8c",
    "monkey-patch": "#d95f02",
    "monkey-patch-descriptors": "#7570b3",
    "selective": "#1b9e77",
    "default": "#e7298a",
    "peer-monkey-patch": "#fdae6b",
    "peer-selective": "#a1d99b",
}
DISPLAY_TASKS = {"mnist": "MNIST", "resnet18": "ResNet-18", "transformer": "Transformer", "dcgan": "DCGAN",
                 "vae": "VAE", "siamese": "Siamese", "gcn": "GCN"}


def value_label(value: float) -> str:
    if value >= 100:
        return f"{value:.0f}x"
    if value >= 10:
        return f"{value:.1f}x"
    return f"{value:.2f}x"


def plot_overheads(rows: list[OverheadRow], out_stem: str | Path, title: str | None = None) -> list[Path]:
    """Draw the figure and write it as PDF and PNG; returns the two paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not rows:
        raise ValueError("no overhead rows to plot")
    tasks = list(dict.fromkeys(row.task for row in rows))
    methods = sorted({row.method for row in rows}, key=method_sort_key)
    values = {(row.task, row.method): row.overhead for row in rows if not math.isnan(row.overhead)}
    memory = {(row.task, row.method): row for row in rows if not math.isnan(row.peak_rss_ratio)}

    width = max(6.0, 1.3 * len(tasks) * max(1, len(methods)) / 3 + 2)
    if memory:
        fig, (ax, mem_ax) = plt.subplots(2, 1, figsize=(width, 6.4), sharex=True)
    else:
        fig, ax = plt.subplots(figsize=(width, 3.6))
    draw_bars(ax, tasks, methods, values, {})

    ax.set_yscale("log")
    all_values = [v for v in values.values() if v > 0] or [1.0]
    ax.set_ylim(min(0.5, min(all_values) * 0.8), max(10.0, max(all_values)) * 4)
    ax.axhline(1.0, color="black", linestyle="--", linewidth=0.8, zorder=0)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
    ax.set_xticks(range(len(tasks)))
    ax.set_xticklabels([DISPLAY_TASKS.get(t, t) for t in tasks])
    ax.set_ylabel("per-iteration time / naive (log)")
    if title:
        ax.set_title(title, fontsize=9)
    ax.legend(ncol=len(methods), fontsize=8, loc="upper right", frameon=False)
    if memory:
        draw_memory_panel(mem_ax, tasks, methods, memory)
    fig.tight_layout()

    out_stem = Path(out_stem)
    paths = [out_stem.with_suffix(".pdf"), out_stem.with_suffix(".png")]
    for path in paths:
        fig.savefig(path, dpi=200)
    plt.close(fig)
    return paths


def FuncFormatter(function):  # matplotlib's, imported when drawing (matplotlib is optional)
    from matplotlib.ticker import FuncFormatter as formatter

    return formatter(function)


def draw_bars(ax, tasks: list[str], methods: list[str], values: dict, hatched: dict) -> None:
    """Grouped bars, one group per task, one bar per method, each labelled with its value; a bar whose
    (task, method) is true in `hatched` is hatched and its label gets a `!`."""
    group_width = 0.8
    bar_width = group_width / len(methods)
    for j, method in enumerate(methods):
        keys = [(i, task) for i, task in enumerate(tasks) if (task, method) in values]
        xs = [i - group_width / 2 + (j + 0.5) * bar_width for i, _ in keys]
        heights = [values[(task, method)] for _, task in keys]
        marks = [bool(hatched.get((task, method))) for _, task in keys]
        bars = ax.bar(xs, heights, bar_width, label=LABELS.get(method, method),
                      color=COLORS.get(method), edgecolor="black", linewidth=0.5)
        for bar, height, mark in zip(bars, heights, marks):
            if mark:
                bar.set_hatch("///")
            ax.annotate(value_label(height) + (" !" if mark else ""), (bar.get_x() + bar.get_width() / 2, height),
                        xytext=(0, 2), textcoords="offset points", ha="center", va="bottom",
                        fontsize=6.5, rotation=90 if len(methods) > 3 else 0,
                        bbox=dict(facecolor="white", edgecolor="none", pad=0.3, alpha=0.8))


def draw_memory_panel(ax, tasks: list[str], methods: list[str], memory: dict) -> None:
    """Peak RSS over naive per task and method (linear axis, dashed line at 1); hatched and `!`: out of
    the memory budget."""
    from eval.perf_overhead.memory_budget import BUDGET_FACTOR, BUDGET_MB

    ratios = {key: row.peak_rss_ratio for key, row in memory.items()}
    draw_bars(ax, tasks, methods, ratios, {key: row.memory_over_budget for key, row in memory.items()})
    ax.axhline(1.0, color="black", linestyle="--", linewidth=0.8, zorder=0)
    ax.set_ylim(0, max(2.0, max(ratios.values()) * 1.3))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
    ax.set_ylabel("peak RSS / naive")
    ax.set_title(f"peak resident set; hatched, !: over {BUDGET_FACTOR:g} x naive + {BUDGET_MB:g} MB", fontsize=8)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="Plot overhead_e2e.csv of a results folder")
    parser.add_argument("res_dir", nargs="?", default="perf_res")
    args = parser.parse_args(argv)
    res_dir = Path(args.res_dir)
    for path in plot_overheads(read_csv(res_dir / "overhead_e2e.csv"), res_dir / "performance"):
        print(f"wrote {path}")
    return 0


__all__ = ["plot_overheads", "LABELS", "METHOD_ORDER"]

if __name__ == "__main__":
    sys.exit(main())
