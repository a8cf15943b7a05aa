"""What the overhead workloads (`<name>/main.py`) share: their common arguments, the per-iteration timer,
and a loader that fetches each batch with one indexing call.

The workloads import this as a top-level module. The runner (`run.py`) copies it beside each private copy
of a workload's `main.py`, which is the script's folder (`sys.path[0]`) when run directly, under the settrace
baseline or under traincheck-collect; a workload run in place finds it one folder up.
"""
import time

import torch
from torch.utils.data import BatchSampler, DataLoader, SequentialSampler

TIMES_FILE = "iteration_times.txt"
CPU_TIMES_FILE = "iteration_cpu_times.txt"


def add_common_arguments(parser, default_seed):
    """--device, --iters, --seed, --times-file and --cpu-times-file, which the runner relies on."""
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--iters", type=int, default=50, help="training iterations to run")
    parser.add_argument("--seed", type=int, default=default_seed)
    parser.add_argument("--times-file", default=TIMES_FILE, help="wall time per iteration")
    parser.add_argument("--cpu-times-file", default=CPU_TIMES_FILE,
                        help="CPU time of the process (all its threads) per iteration")


class IterationTimer:
    """Writes one wall time (`time.perf_counter`) and one process CPU time (`time.process_time`) per
    iteration, in seconds, one line each to two files that it opens (overwriting) when made.

        with IterationTimer(args.times_file, args.cpu_times_file, device) as timer:
            for batch in loader:
                with timer.iteration():
                    ...  # the training step: what is timed

    Each line is flushed at once, so that a run stopped by its time limit keeps its completed iterations.
    On cuda the clock stops after `torch.cuda.synchronize()`. An iteration that raises is not written.
    The method is not named `step`: traincheck-collect's source rewrite reads a `.step()` call as a
    training statement and would add a stage annotation to every iteration.
    """

    def __init__(self, times_file, cpu_times_file, device):
        self._times = open(times_file, "w")
        self._cpu_times = open(cpu_times_file, "w")
        self._iteration = _TimedIteration(self, device.type == "cuda")
        self.count = 0

    def iteration(self):
        return self._iteration

    def record(self, wall_time, cpu_time):
        self._times.write(f"{wall_time}\n")
        self._times.flush()
        self._cpu_times.write(f"{cpu_time}\n")
        self._cpu_times.flush()
        self.count += 1

    def close(self):
        self._times.close()
        self._cpu_times.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()


class _TimedIteration:
    """The clocks of one iteration. The timed region runs from the end of `__enter__` to the start of
    `__exit__`: under the settrace baseline only these two frames' events fall in it."""

    __slots__ = ("_timer", "_sync_cuda", "_wall_start", "_cpu_start")

    def __init__(self, timer, sync_cuda):
        self._timer, self._sync_cuda = timer, sync_cuda

    def __enter__(self):
        self._wall_start, self._cpu_start = time.perf_counter(), time.process_time()

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            return
        if self._sync_cuda:
            torch.cuda.synchronize()
        wall_time, cpu_time = time.perf_counter() - self._wall_start, time.process_time() - self._cpu_start
        self._timer.record(wall_time, cpu_time)


def batched_loader(dataset, batch_size):
    """A DataLoader that fetches each batch with one indexing call (a list of indices) rather than
    batch_size item fetches and a collate. Loading is outside the timed step; this keeps it cheap under
    the settrace baseline, which would otherwise spend most of its time limit formatting sample lists."""
    sampler = BatchSampler(SequentialSampler(dataset), batch_size, drop_last=False)
    return DataLoader(dataset, sampler=sampler, batch_size=None)
