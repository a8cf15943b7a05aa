"""Does a caught bug's first alarm name what is at fault?

Each case's `case.yml` lists its `culprits`: the APIs or variables at fault, written from the bug, not
from any alarm (`Optimizer.zero_grad`, `Module.train`, `*.grad`). An alarm names a culprit when one of
the words of its label (the violated invariant's display name) contains a culprit, or matches it as an
fnmatch pattern when the culprit has a wildcard. The *culprit rate* of a (setting, tool, check) is the
share of its caught cases (`detected`) whose catching invariant (`caught_by`, the first alarm unique to
the buggy run) names a culprit.

    python -m eval.detection.culprits [--csv eval/detection/results/detection.csv]
"""

from __future__ import annotations

import argparse
import csv
import fnmatch
import sys
from collections import defaultdict
from pathlib import Path

from eval.detection.cases import discover

RESULTS = Path(__file__).resolve().parent / "results" / "detection.csv"


def names_culprit(label: str, culprits: tuple[str, ...] | list[str]) -> bool:
    words = label.replace("(", " ").replace(")", " ").replace(",", " ").split()
    for culprit in culprits:
        wildcard = any(c in culprit for c in "*?[")
        for word in words:
            if fnmatch.fnmatchcase(word, culprit) if wildcard else culprit in word:
                return True
    return False


def culprit_rates(rows: list[dict], culprits_by_case: dict[str, tuple[str, ...]], rep: str = "1") -> dict:
    """{(setting, tool, mode): (caught cases whose first alarm names a culprit, caught cases)}, over the
    rows of repetition `rep` of cases that list culprits."""
    out: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    for row in rows:
        if row.get("rep") != rep or row.get("status") != "ok" or row.get("detected") != "True":
            continue
        culprits = culprits_by_case.get(row["case"])
        if not culprits:
            continue
        tally = out[(row["setting"], row["tool"], row["mode"])]
        tally[1] += 1
        tally[0] += names_culprit(row.get("caught_by", ""), culprits)
    return {key: tuple(v) for key, v in sorted(out.items())}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--csv", type=Path, default=RESULTS, help="detection rows (results/detection.csv of a run)")
    ap.add_argument("--rep", default="1", help="the repetition to count")
    args = ap.parse_args(argv)
    with open(args.csv, newline="") as f:
        rows = list(csv.DictReader(f))
    culprits = {case.name: case.culprits for case in discover()}
    print("| setting | tool | check | first alarm names a culprit |")
    print("|---|---|---|---|")
    for (setting, tool, mode), (named, caught) in culprit_rates(rows, culprits, args.rep).items():
        print(f"| {setting} | {tool} | {mode} | {named}/{caught} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
