"""Alarms a pack raises on already collected runs of detection cases (run level, as a user without a
good run sees them): for each case folder of a detection run's traces (`<name>.good_s3`, `<name>.bug_s3`),
the invariants of the pack each run violates, and whether the bug is a clean catch (its run alarms, its
correct twin does not). The cases are never used to build the pack.

    python -m eval.pack_corpus.alarms --pack pack:default --out /tmp/alarms detection_res/rep1/traces
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path


def violated(trace: Path, pack: str, out: Path) -> int | None:
    exe = shutil.which("traincheck-check")
    if exe is None:
        raise SystemExit("pack: traincheck-check not found on PATH")
    proc = subprocess.run([exe, "-f", str(trace), "-i", pack, "-o", str(out), "--no-html-report"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"[alarms] {trace}: check failed: {proc.stderr.strip()[-300:]}", file=sys.stderr)
        return None
    return json.loads((out / trace.name / "violations_summary.json").read_text())["distinct_invariants_violated"]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("traces", nargs="+", type=Path, help="detection traces folders (<out>/rep<r>/traces)")
    p.add_argument("--pack", default="pack:default")
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    rows = []
    for root in args.traces:
        for case in sorted(d for d in root.iterdir() if d.is_dir()):
            good, bug = case / f"{case.name}.good_s3", case / f"{case.name}.bug_s3"
            if not (good.is_dir() and bug.is_dir()):
                continue
            g = violated(good, args.pack, args.out / case.name / "good")
            b = violated(bug, args.pack, args.out / case.name / "bug")
            rows.append({"case": case.name, "correct_alarms": g, "buggy_alarms": b,
                         "clean_catch": bool(b) and g == 0})
            print(f"{case.name}\tcorrect {g}\tbuggy {b}\tclean catch {rows[-1]['clean_catch']}", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "alarms.json").write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
