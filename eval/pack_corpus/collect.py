"""Collecting the pack corpus's programs under `traincheck-collect` (full instrumentation), once: a
program's trace folder is kept in the traces cache (`<traces>/<name>/trace`) and reused by every later
build, so changing the vetting does not collect again. A folder counts as collected only when its
`collected.ok` marker exists (written after the collector exited 0).

    python -m eval.pack_corpus.collect --traces /tmp/pack_traces [-j 2] [names...]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import zlib
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from eval.detection.jobs import Job, run_all
from eval.detection.tools import collector_command
from eval.pack_corpus.manifest import Program, load

DONE_MARKER = "collected.ok"


def trace_dir(traces: Path, program: Program) -> Path:
    return traces / program.name / "trace"


def is_collected(traces: Path, program: Program) -> bool:
    return (traces / program.name / DONE_MARKER).is_file()


def program_seed(program: Program) -> int:
    """Each program runs with a seed of its own, fixed by its name. A seed is the user's choice, not a rule
    of training: with one seed for the whole corpus (the first pack's 1), every candidate that held an
    argument to it ("manual_seed() calls manual_seed_all(seed=1)") passed on every program and was shipped,
    and then alarmed on any program seeded otherwise. With seeds that differ, vetting rule (a) drops them."""
    return 1 + zlib.crc32(program.name.encode()) % 9973


def collect_command(program: Program, out_dir: Path, seed: int | None = None) -> list[str]:
    seed = program_seed(program) if seed is None else seed
    cmd = collector_command(program.script, out_dir, program.shell_launcher, program.models_to_track, who="pack")
    return cmd + ["--no-pack", "--", *program.args, "--seed", str(seed)]  # the corpus is recorded, not checked


# A failed collection is run again, up to this many times in all. torch 2.13's gloo can abort a rank at
# interpreter exit, after the program has finished ("terminate called without an active exception": a
# gloo thread frees a finished all-reduce while Python shuts down), in about 1 of 5 runs of a DDP program,
# plainly as under the collector; a second run is a collection as valid as the first.
ATTEMPTS = 3


def collect(programs: list[Program], traces: Path, workers: int = 1, time_limit: float = 900.0) -> list[Program]:
    """Collects every program not yet in the cache (a failed one up to ATTEMPTS times); returns the programs
    whose traces are there."""
    def mark(job: Job) -> None:  # at once: an interrupted build keeps what it collected
        if job.ok:
            (traces / job.label / DONE_MARKER).write_text(f"{job.seconds:.1f}\n")

    for attempt in range(ATTEMPTS):
        jobs = []
        for prog in programs:
            if is_collected(traces, prog):
                continue
            out = trace_dir(traces, prog)
            if out.exists():                      # a collection that failed or was stopped part-way
                shutil.rmtree(out)
            jobs.append(Job(prog.name, collect_command(prog, out), traces / prog.name / "collect.log",
                            traces / prog.name / "cwd", time_limit))
        if not jobs:
            break
        run_all(jobs, "collect" if attempt == 0 else f"collect again ({attempt + 1} of {ATTEMPTS})", workers,
                on_done=mark)
    return [p for p in programs if is_collected(traces, p)]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("names", nargs="*", help="programs to collect (default: all)")
    p.add_argument("--traces", type=Path, required=True, help="the traces cache folder")
    p.add_argument("-j", "--jobs", type=int, default=1, help="collections at a time")
    p.add_argument("--time-limit", type=float, default=900.0)
    args = p.parse_args(argv)
    by_name = {q.name: q for q in load()}
    unknown = [n for n in args.names if n not in by_name]
    if unknown:
        raise SystemExit(f"pack: no program(s) {unknown} in the manifest")
    programs = [by_name[n] for n in args.names] if args.names else list(by_name.values())
    done = collect(programs, args.traces.resolve(), args.jobs, args.time_limit)
    print(f"collected {len(done)} of {len(programs)} programs in {args.traces}", file=sys.stderr)
    return 0 if len(done) == len(programs) else 1


if __name__ == "__main__":
    sys.exit(main())
