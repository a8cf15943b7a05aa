#!/usr/bin/env python3
"""Gathers the seed corpus of each fuzz target into OUT/<target>/ (one file per input):
the committed seeds in fuzz/seeds/<target>/, plus every distinct line of the repository's test data
(trace lines of tests/cpp/data/**/trace_*.log, invariant lines of tests/cpp/data/**/invariants*.json).
Usage: gather_seeds.py OUT"""
import hashlib
import pathlib
import shutil
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "cpp" / "data"
LINES_FROM = {
    "trace_line": sorted(DATA.rglob("trace_*.log")),
    "invariant": sorted(DATA.rglob("invariants*.json")),
    "api_signatures": [],
    "record_frames": [],
}


def main() -> None:
    out = pathlib.Path(sys.argv[1])
    for target, files in LINES_FROM.items():
        dest = out / target
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        for seed in sorted((ROOT / "fuzz" / "seeds" / target).iterdir()):
            shutil.copy(seed, dest / seed.name)
        lines = {line for f in files for line in f.read_bytes().splitlines() if line.strip()}
        for line in sorted(lines):
            (dest / hashlib.sha1(line).hexdigest()).write_bytes(line)
        print(f"{target}: {sum(1 for _ in dest.iterdir())} seeds")


if __name__ == "__main__":
    main()
