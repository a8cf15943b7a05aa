"""Per-step overhead of selective collection on a Hugging Face Transformers `Trainer` run.

    python bench/trainer_selective_overhead.py [--rounds 5] [--steps 60] [--skip 5]

Needs transformers and accelerate (`pip install 'traincheck[stacks]'`). Workload: the tiny GPT-2 of
tests/python/scripts/hf_gpt2_trainer.py (built from a config, synthetic tokens), without evaluation.
First a full run (`--models-to-track model`) and `traincheck-infer` on it give the invariants; then each
round runs, in rotating order and each in its own process, the plain script (baseline) and two
candidates, both with every step recorded and checked in-process (the tool's defaults):
`selective` is `traincheck-collect -i invariants.json` (the wrappers of the APIs the invariants name;
invariants over variables are not triggered), `selective+track` adds `--models-to-track model` (the
model's parameters digested after each optimizer step, so those are checked too). The script times each
optimisation step inside the Trainer (on_step_begin to on_step_end), in wall time and in the training
thread's CPU time (which other processes on a shared machine disturb less; the writer thread's work, the
in-process check included, is in the wall time only); the first `--skip` steps are dropped. A round's
ratio is the candidate's median step time over the baseline's; the figure is the median over rounds.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tests" / "python" / "scripts" / "hf_gpt2_trainer.py"
ENV = {
    "OMP_NUM_THREADS": "1",
    "GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296",
}


def collect_command(out: Path, *extra: str, track: bool = True) -> list:
    return [sys.executable, "-m", "traincheck.collect_trace", "-p", str(SCRIPT), "--output-dir", str(out), "--overwrite",
            *(["--models-to-track", "model"] if track else []), *extra]


def run(cmd_head: list, work: Path, steps: int, name: str) -> list:
    """(wall, thread CPU) seconds of each step."""
    times = work / f"times_{name}.txt"
    script_args = ["--steps", str(steps), "--eval-steps", "0", "--result", str(work / f"{name}.json"),
                   "--times", str(times)]
    cmd = [*cmd_head, *(["--"] if cmd_head[1] == "-m" else []), *script_args]
    subprocess.run(cmd, check=True, capture_output=True, env={**os.environ, **ENV}, cwd=work)
    return [tuple(map(float, line.split())) for line in times.read_text().splitlines()]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--skip", type=int, default=5, help="warm-up steps dropped from each run")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tc_trainer_"))
    run(collect_command(work / "full"), work, args.steps, "full")
    subprocess.run(["traincheck-infer", "-f", str(work / "full"), "-o", str(work / "inv.json")], check=True,
                   capture_output=True)
    deployed = len((work / "inv.json").read_text().splitlines())

    inv = str(work / "inv.json")
    commands = {"plain": [sys.executable, str(SCRIPT)],
                "selective": collect_command(work / "selective", "-i", inv, track=False),
                "selective+track": collect_command(work / "selective_track", "-i", inv)}
    candidates = [name for name in commands if name != "plain"]
    clocks = ("wall", "thread CPU")
    ratios = {(n, c): [] for n in candidates for c in clocks}
    medians = {(n, c): [] for n in commands for c in clocks}
    names = list(commands)
    for r in range(args.rounds):
        median = {}
        for name in names[r % len(names):] + names[: r % len(names)]:
            steps = run(commands[name], work, args.steps, name.replace("+", "_"))[args.skip:]
            for k, clock in enumerate(clocks):
                median[name, clock] = statistics.median(s[k] for s in steps)
                medians[name, clock].append(median[name, clock] * 1e3)
        for key in ratios:
            ratios[key].append(median[key] / median["plain", key[1]])
    print(f"transformers Trainer, tiny GPT-2, {args.steps} steps ({args.skip} skipped), {deployed} invariants deployed")
    print(f"  {'run':<16} {'clock':<11} {'ms/step':>8} {'ratio to plain':>15}   per round")
    for clock in clocks:
        print(f"  {'plain':<16} {clock:<11} {statistics.median(medians['plain', clock]):8.2f}")
        for name in candidates:
            per_round = ", ".join(f"{x:.3f}" for x in ratios[name, clock])
            print(f"  {name:<16} {clock:<11} {statistics.median(medians[name, clock]):8.2f} "
                  f"{statistics.median(ratios[name, clock]):14.3f}x   {per_round}")
    print(f"(median over {args.rounds} rotated rounds of per-run median step time; runs in {work})")

if __name__ == "__main__":
    main()
