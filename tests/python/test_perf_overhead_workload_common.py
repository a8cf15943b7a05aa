"""The overhead workloads' shared module: the iteration timer writes one flushed line per iteration to
each of its files, overwriting old ones; the common arguments; the batched loader."""
import argparse
import sys
from pathlib import Path

import pytest
import torch
from torch.utils.data import TensorDataset

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "eval" / "perf_overhead" / "workloads"))

from workload_common import IterationTimer, add_common_arguments, batched_loader  # noqa: E402


def test_timer_writes_one_flushed_line_per_iteration_and_overwrites(tmp_path):
    wall, cpu = tmp_path / "wall.txt", tmp_path / "cpu.txt"
    wall.write_text("stale\n" * 10)
    with IterationTimer(wall, cpu, torch.device("cpu")) as timer:
        for n in range(1, 4):
            with timer.iteration():
                sum(range(10000))
            # another process (the runner, after a time limit) reads the files while they are open
            for path in (wall, cpu):
                lines = path.read_text().splitlines()
                assert len(lines) == n and all(float(line) >= 0 for line in lines)
        assert timer.count == 3
    assert float(wall.read_text().splitlines()[-1]) > 0


def test_an_iteration_that_raises_is_not_written(tmp_path):
    wall, cpu = tmp_path / "wall.txt", tmp_path / "cpu.txt"
    with IterationTimer(wall, cpu, torch.device("cpu")) as timer:
        with pytest.raises(ZeroDivisionError):
            with timer.iteration():
                1 / 0
    assert wall.read_text() == cpu.read_text() == "" and timer.count == 0


def test_common_arguments_and_their_defaults():
    parser = argparse.ArgumentParser()
    add_common_arguments(parser, default_seed=42)
    args = parser.parse_args([])
    assert (args.device, args.iters, args.seed) == ("cpu", 50, 42)
    assert (args.times_file, args.cpu_times_file) == ("iteration_times.txt", "iteration_cpu_times.txt")
    args = parser.parse_args(["--device", "cuda", "--iters", "3", "--seed", "7", "--times-file", "t"])
    assert (args.device, args.iters, args.seed, args.times_file) == ("cuda", 3, 7, "t")


def test_batched_loader_yields_whole_batches_in_order():
    data = torch.arange(10)
    batches = [batch for (batch,) in batched_loader(TensorDataset(data), 4)]
    assert [b.tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


def test_the_runners_copy_of_a_workload_has_the_shared_module_beside_main(tmp_path):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from eval.perf_overhead import run as perf_run

    perf_run.copy_workload(perf_run.WORKLOADS_DIR, "mnist", tmp_path / "src")
    assert (tmp_path / "src" / "workload_common.py").read_text() == \
        (perf_run.WORKLOADS_DIR / "workload_common.py").read_text()
    assert (tmp_path / "src" / "main.py").is_file()


# A process that times `iters` iterations of a short sleep in lockstep (TC_EVAL_TURNS) and writes, per
# iteration, the monotonic start and end of its timed region. `die_after` stops it early (a run killed
# by its time limit).
TURN_TAKER = """
import os, sys, time
sys.path.insert(0, {workloads!r})
import torch
from workload_common import IterationTimer
iters, die_after, log = int(sys.argv[1]), int(sys.argv[2]), open(sys.argv[3], "w")
with IterationTimer(sys.argv[3] + ".t", sys.argv[3] + ".c", torch.device("cpu")) as timer:
    for i in range(iters):
        if i == die_after:
            os._exit(0)
        with timer.iteration():
            start = time.monotonic()
            time.sleep(0.02)
            log.write(f"{{start}} {{time.monotonic()}}\\n")
            log.flush()
"""


def run_ring(tmp_path, plans):
    """Start one turn taker per (iters, die_after) in a ring of FIFOs; their (start, end) intervals."""
    import os
    import subprocess

    workloads = str(Path(__file__).resolve().parents[2] / "eval" / "perf_overhead" / "workloads")
    script = tmp_path / "taker.py"
    script.write_text(TURN_TAKER.format(workloads=workloads))
    fifos = [tmp_path / f"{i}.fifo" for i in range(len(plans))]
    for f in fifos:
        os.mkfifo(f)
    procs = []
    for i, (iters, die_after) in enumerate(plans):
        env = dict(os.environ, TC_EVAL_TURNS=f"{fifos[i]},{fifos[(i + 1) % len(plans)]},{int(i == 0)}")
        procs.append(subprocess.Popen([sys.executable, str(script), str(iters), str(die_after),
                                       str(tmp_path / f"log{i}")], env=env))
    for p in procs:
        assert p.wait(timeout=120) == 0
    return [[tuple(map(float, line.split())) for line in (tmp_path / f"log{i}").read_text().splitlines()]
            for i in range(len(plans))]


def test_lockstep_runs_take_turns_and_never_overlap(tmp_path):
    logs = run_ring(tmp_path, [(6, -1), (6, -1), (6, -1)])
    assert [len(log) for log in logs] == [6, 6, 6]
    # In ring order: iteration i of process 0, then of 1, then of 2, then iteration i + 1 of process 0.
    sequence = [logs[p][i] for i in range(6) for p in range(3)]
    for earlier, later in zip(sequence, sequence[1:]):
        assert earlier[1] <= later[0]


def test_a_partner_that_stops_does_not_block_the_others(tmp_path):
    logs = run_ring(tmp_path, [(8, -1), (8, 3), (8, -1)])
    assert [len(log) for log in logs] == [8, 3, 8]
