"""Runs programs of the pack corpus plainly (no tool), one at a time, each in a fresh folder, and prints
each one's wall time, exit code and FINAL line:

    python -m eval.pack_corpus.run_plain                       # every program, seed 1
    python -m eval.pack_corpus.run_plain mlp_sgd_plain --seed 2
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from eval.pack_corpus.manifest import load


def final_line(output: str) -> str:
    return next((line for line in reversed(output.splitlines()) if line.startswith("FINAL ")), "")


def run(program, seed: int, workdir: Path) -> tuple[int, float, str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    start = time.perf_counter()
    proc = subprocess.run(program.plain_command(seed), cwd=workdir, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    return proc.returncode, seconds, final_line(proc.stdout) or (proc.stdout + proc.stderr)[-2000:]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("names", nargs="*")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    programs = [q for q in load() if not args.names or q.name in args.names]
    failed = 0
    for prog in programs:
        with tempfile.TemporaryDirectory(prefix=f"corpus_{prog.name}_") as tmp:
            rc, seconds, final = run(prog, args.seed, Path(tmp))
        failed += rc != 0
        print(f"{prog.name}\t{prog.launcher}\trc={rc}\t{seconds:.1f}s\t{final}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
