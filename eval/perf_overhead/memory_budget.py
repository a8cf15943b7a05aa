"""The memory budget of the tool, as the overhead evaluation applies it: a method is out of budget when its
peak RSS under collection exceeds BUDGET_FACTOR x naive's + BUDGET_MB.

A leaf module (it imports nothing from this package) so that both the time analysis (analysis.py, whose
table prints the budget's footnote) and the memory analysis (memory_analysis.py, which decides who is
over) can import it without importing each other.
"""
from __future__ import annotations

# BUDGET_MB is the budget docs/collection.md §Memory states: the heap-reclaim step, event chunks, tables.
BUDGET_FACTOR = 1.10
BUDGET_MB = 160.0


def over_budget(peak_mb: float, naive_peak_mb: float, budget_mb: float = BUDGET_MB) -> bool:
    return peak_mb > BUDGET_FACTOR * naive_peak_mb + budget_mb


def budget_footnote(any_over: bool) -> str:
    rule = (f"RSS: peak resident set over naive's (median of the runs), '+x/it' its growth in MB per iteration "
            f"over the second half of the run; '>' a run stopped by the RSS limit; ")
    return rule + (f"'!' out of the memory budget (peak > {BUDGET_FACTOR:g} x naive + {BUDGET_MB:g} MB)"
                   + ("" if any_over else ": none"))
