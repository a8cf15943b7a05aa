"""What the vetting kept and dropped, per hypothesis class (a relation; its hypotheses with argument values
apart: rule (e)'s unit, cpp/pack/vetting.h), as Markdown (the tables of docs/relations.md §The
shipped pack), from a build's `vet_report.json`:

    python -m eval.pack_corpus.summary /tmp/pack [--examples 3]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

COLUMNS = ("candidates", "kept", "device_bound", "step_bound", "violated", "too_few_programs", "one_family",
           "class_excluded")


def table(report: dict) -> str:
    rows = ["| hypothesis class | candidates | kept | fixes the device | fixes the step number | violated on a correct program | on too few programs | one family | its class does not generalise |",
            "|---|---|---|---|---|---|---|---|---|"]
    total = dict.fromkeys(COLUMNS, 0)
    for name, t in sorted(report["by_class"].items()):
        rows.append(f"| {name} | " + " | ".join(str(t.get(c, 0)) for c in COLUMNS) + " |")
        for c in COLUMNS:
            total[c] += t.get(c, 0)
    rows.append("| all | " + " | ".join(str(total[c]) for c in COLUMNS) + " |")
    return "\n".join(rows)


def examples(report: dict, per_class: int) -> str:
    """Per class, the dropped candidates violated on the most programs (the widest-spread false
    alarms) and the kept ones that passed on the most programs."""
    out = []
    by_class: dict[str, list[dict]] = {}
    for d in report["decisions"]:
        by_class.setdefault(d["class"], []).append(d)
    for name, decisions in sorted(by_class.items()):
        out.append(f"- {name}")
        dropped = sorted((d for d in decisions if d["violated_on"]),
                         key=lambda d: (-len(d["violated_on"]), -len(d["passed_on"]), d["description"]))
        kept = sorted((d for d in decisions if d["verdict"] == "kept"),
                      key=lambda d: (-len(d["passed_on"]), d["description"]))
        for d in dropped[:per_class]:
            out.append(f"  - dropped: {d['description'][:160]} (passed {len(d['passed_on'])}, "
                       f"violated {len(d['violated_on'])}: {', '.join(d['violated_on'][:3])})")
        for d in kept[:per_class]:
            out.append(f"  - kept: {d['description'][:160]} (passed {len(d['passed_on'])} programs, "
                       f"{len(d['families_passed'])} families)")
    return "\n".join(out)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", type=Path, help="a build's --out folder")
    p.add_argument("--examples", type=int, default=3)
    args = p.parse_args(argv)
    report = json.loads((args.out / "vet_report.json").read_text())
    print(f"{report['programs']} programs, rule: passed on >= {report['rule']['min_programs']} programs of >= "
          f"{report['rule']['min_families']} families, violated on none: {report['kept']} of "
          f"{report['candidates']} candidates kept\n")
    print(table(report))
    loo = report.get("leave_one_out") or {}
    if loo:
        dirty = {name: len(v) for name, v in loo.items() if v}
        print(f"\nRule (c), from the check results: {len(loo) - len(dirty)} of {len(loo)} programs check clean "
              f"with the pack vetted without them; the others: {dirty}")
    print()
    if args.examples > 0:
        print(examples(report, args.examples))
    return 0


if __name__ == "__main__":
    sys.exit(main())
