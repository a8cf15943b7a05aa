"""Where each run of one repetition lives (`<out>/rep<r>/...`) and which programs make up the training
sets of the transfer and false-positive experiments.

A *program* is one bug-free training program with one trace folder: a case's correct variant (seed 1) or
an overhead workload (`eval/perf_overhead/workloads/<name>`, run for a few iterations)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from eval.detection.cases import Case

REPO = Path(__file__).resolve().parents[2]
WORKLOADS_DIR = REPO / "eval" / "perf_overhead" / "workloads"

GOOD_SEEDS = (1, 2)        # same pipeline: infer from these two good runs
CHECK_SEED = 3             # the buggy run and the third good run
# same: invariants from the case's own good runs; transfer: from the programs outside its fold; pack: the
# shipped pack (python/traincheck/packs, learned from eval/pack_corpus, which holds no case), no inference.
SETTINGS = ("same", "transfer", "pack")
RUN_NAMES = {"good_s1": (1, False), "good_s2": (2, False), "good_s3": (CHECK_SEED, False), "bug_s3": (CHECK_SEED, True)}


def workload_names() -> list[str]:
    return sorted(p.parent.name for p in WORKLOADS_DIR.glob("*/main.py"))


@dataclass(frozen=True)
class Program:
    name: str                      # "case:<name>" or "workload:<name>"
    train_trace: Path              # the trace folder inference reads
    check_trace: Path              # the trace folder a false-positive check reads (another run where there is one)


@dataclass(frozen=True)
class RepLayout:
    root: Path                     # <out>/rep<r>

    # Trace folder names are unique across programs: a check of several folders writes its results to
    # <check dir>/<folder name>/.
    def run(self, case: Case, run_name: str) -> Path:
        return self.root / "traces" / case.name / f"{case.name}.{run_name}"

    def workload_run(self, workload: str) -> Path:
        return self.root / "traces" / f"workload_{workload}" / f"workload_{workload}.good_s1"

    def invariants(self, tool: str, setting: str, key: str) -> Path:
        return self.root / "invariants" / tool / setting / f"{key}.json"

    def check_dir(self, tool: str, setting: str, key: str) -> Path:
        return self.root / "checks" / tool / setting / key

    def online_run(self, setting: str, case: Case, run_name: str) -> Path:
        return self.root / "online" / setting / case.name / run_name

    def log(self, *parts: str) -> Path:
        return self.root / "logs" / ("_".join(parts).replace("/", "_") + ".log")

    def programs(self, cases: list[Case], workloads: list[str]) -> list[Program]:
        progs = [Program(f"case:{c.name}", self.run(c, "good_s1"), self.run(c, "good_s3")) for c in cases]
        progs += [Program(f"workload:{w}", self.workload_run(w), self.workload_run(w)) for w in workloads]
        return progs


def transfer_fold(cases: list[Case], case: Case, folds: int) -> int:
    """Cases are dealt to folds in name order; a case's transfer invariants come from every program
    outside its fold (the other folds' cases and all workloads), so never from the case itself."""
    return sorted(c.name for c in cases).index(case.name) % folds


def transfer_training(layout: RepLayout, cases: list[Case], workloads: list[str], fold: int, folds: int) -> list[Path]:
    others = [c for c in cases if transfer_fold(cases, c, folds) != fold]
    return [layout.run(c, "good_s1") for c in others] + [layout.workload_run(w) for w in workloads]


@dataclass(frozen=True)
class FpSplit:
    train_sizes: tuple[int, ...]
    train: list[Program]           # the largest training set; size k uses its first k
    check: list[Program]


def fp_split(programs: list[Program], train_sizes: tuple[int, ...], check_count: int, seed: int = 0) -> FpSplit:
    """A fixed shuffle of the bug-free programs: the first max(train_sizes) train, the next `check_count`
    are checked (never trained on). The same seed gives the same split in every repetition and tool."""
    if not train_sizes:
        raise ValueError("no training set sizes")
    order = sorted(programs, key=lambda p: p.name)
    random.Random(seed).shuffle(order)
    n_train = max(train_sizes)
    if len(order) < n_train + 1:
        raise ValueError(f"{len(order)} bug-free programs: need more than the largest training set ({n_train})")
    return FpSplit(tuple(sorted(train_sizes)), order[:n_train], order[n_train:n_train + check_count])
