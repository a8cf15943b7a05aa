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
