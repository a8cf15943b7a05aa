"""What the overhead workloads (`<name>/main.py`) share: their common arguments, the per-iteration timer,
and a loader that fetches each batch with one indexing call.

The workloads import this as a top-level module. The runner (`run.py`) copies it beside each private copy
of a workload's `main.py`, which is the script's folder (`sys.path[0]`) when run directly, under the settrace
baseline or under traincheck-collect; a workload run in place finds it one folder up.
"""
import os
import select
import time

import torch
from torch.utils.data import BatchSampler, DataLoader, SequentialSampler

TIMES_FILE = "iteration_times.txt"
CPU_TIMES_FILE = "iteration_cpu_times.txt"
RSS_FILE = "iteration_rss_mb.txt"  # VmRSS after each iteration, beside the times file
_PAGE_MB = os.sysconf("SC_PAGE_SIZE") / (1024 * 1024)


def resident_mb():
    """This process's resident set in MiB (/proc/self/statm; NaN where there is no /proc)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * _PAGE_MB
    except OSError:
        return float("nan")


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
    iteration, in seconds, one line each to two files that it opens (overwriting) when made; and the
    process's resident set (MiB) after the iteration to `iteration_rss_mb.txt` beside the first (read
    after the clocks stop: outside the timed region).

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
        self._rss = open(os.path.join(os.path.dirname(os.path.abspath(times_file)), RSS_FILE), "w")
        self._iteration = _TimedIteration(self, device.type == "cuda", TurnTaking.from_environment())
        self.count = 0

    def iteration(self):
        return self._iteration

    def record(self, wall_time, cpu_time):
        self._times.write(f"{wall_time}\n")
        self._times.flush()
        self._cpu_times.write(f"{cpu_time}\n")
        self._cpu_times.flush()
        self._rss.write(f"{resident_mb()}\n")
        self._rss.flush()
        self.count += 1

    def close(self):
        self._times.close()
        self._cpu_times.close()
        self._rss.close()
        self._iteration.turns.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()


class _TimedIteration:
    """The clocks of one iteration. The timed region runs from the end of `__enter__` to the start of
    `__exit__`: under the settrace baseline only these two frames' events fall in it."""

    __slots__ = ("_timer", "_sync_cuda", "turns", "_wall_start", "_cpu_start")

    def __init__(self, timer, sync_cuda, turns):
        self._timer, self._sync_cuda, self.turns = timer, sync_cuda, turns

    def __enter__(self):
        self.turns.wait()
        self._wall_start, self._cpu_start = time.perf_counter(), time.process_time()

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            return
        if self._sync_cuda:
            torch.cuda.synchronize()
        wall_time, cpu_time = time.perf_counter() - self._wall_start, time.process_time() - self._cpu_start
        self._timer.record(wall_time, cpu_time)
        self.turns.pass_on()


class TurnTaking:
    """Lockstep with the other runs of the same workload (the runner's `--lockstep`): each process's
    iteration i runs right after the previous process's iteration i, never at the same time, so that all
    methods' i-th iterations meet the same machine. On the small shared machines this evaluation runs on,
    the speed of a core drifts by +-15% over seconds, which separate, successive runs cannot cancel.

    The runner names two FIFOs in TC_EVAL_TURNS="<mine>,<next>,<first>": wait for a byte on mine before an
    iteration (outside the timed region), write one to the next process's after it. A partner that
    stopped (time limit, failure) ends the lockstep: this process then runs on alone, never blocked.
    """

    GIVE_UP_SECONDS = 600.0  # a partner silent this long is considered gone

    def __init__(self, mine=None, nxt=None, first=False):
        self._mine_path, self._next_path, self._has_turn = mine, nxt, first
        self._mine = self._next = None
        self.active = mine is not None

    @classmethod
    def from_environment(cls):
        spec = os.environ.get("TC_EVAL_TURNS")
        if not spec:
            return cls()
        mine, nxt, first = spec.split(",")
        return cls(mine, nxt, first == "1")

    def _open(self):
        # Own end first, without blocking; then the next process's, retrying until it has opened its own.
        self._mine = os.open(self._mine_path, os.O_RDONLY | os.O_NONBLOCK)
        deadline = time.monotonic() + self.GIVE_UP_SECONDS
        while self._next is None:
            try:
                self._next = os.open(self._next_path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:  # ENXIO: no reader yet
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    def wait(self):
        if not self.active:
            return
        try:
            if self._mine is None:
                self._open()
            if self._has_turn:
                self._has_turn = False
                return
            ready, _, _ = select.select([self._mine], [], [], self.GIVE_UP_SECONDS)
            if not ready or os.read(self._mine, 1) == b"":  # timed out, or every writer closed
                self.close()
        except OSError:
            self.close()

    def pass_on(self):
        if not self.active:
            return
        try:
            os.write(self._next, b"t")
        except OSError:  # the next process is gone (EPIPE)
            self.close()

    def close(self):
        self.active = False
        for fd in (self._mine, self._next):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._mine = self._next = None


def batched_loader(dataset, batch_size):
    """A DataLoader that fetches each batch with one indexing call (a list of indices) rather than
    batch_size item fetches and a collate. Loading is outside the timed step; this keeps it cheap under
    the settrace baseline, which would otherwise spend most of its time limit formatting sample lists."""
    sampler = BatchSampler(SequentialSampler(dataset), batch_size, drop_last=False)
    return DataLoader(dataset, sampler=sampler, batch_size=None)
