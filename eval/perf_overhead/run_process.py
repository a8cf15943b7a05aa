"""Running one process of the overhead evaluation under a time limit and an RSS limit, in its own
session (process group), and reaping it with os.wait4 for its peak resident set (process_memory.py).
`run.py` runs the evaluation with these; see README.md here ("Time limits", "Memory")."""
from __future__ import annotations

import math
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from eval.perf_overhead import analysis
from eval.perf_overhead.process_memory import RssWatch, process_tree, reap

CPU_TIMES_FILE = "iteration_cpu_times.txt"  # the process's CPU time per iteration, beside the times file
RSS_FILE = "iteration_rss_mb.txt"  # the process's VmRSS (MiB) after each iteration, beside it
KILL_GRACE_SECONDS = 10.0
# A run whose process group's resident set passes this is stopped and marked `rss limit` (README.md here,
# "Memory"): the 2-core machine has 24 GB and others share it.
DEFAULT_RSS_LIMIT_MB = 4096.0


@dataclass
class RunOutcome:
    status: str  # "ok", "time limit", "rss limit", "failed", "no iterations"
    returncode: int | None
    elapsed: float
    times: list[float]
    cpu_times: list[float] = field(default_factory=list)
    peak_rss_mb: float = math.nan  # ru_maxrss of the run's process and its waited-for descendants
    rss_mb: list[float] = field(default_factory=list)  # VmRSS after each iteration, where written


@dataclass
class Launched:
    """A run's process, started in its own process group, with the moment it must be stopped."""
    proc: subprocess.Popen
    log: object
    started: float
    deadline: float
    watch: RssWatch | None = None
    peak_rss_mb: float = math.nan  # set when reaped


def launch(cmd: list[str], cwd: Path, env: dict[str, str], limit: float, log_path: Path,
           rss_limit_mb: float | None = DEFAULT_RSS_LIMIT_MB) -> Launched:
    log = open(log_path, "w")
    log.write("$ " + " ".join(cmd) + "\n")
    log.flush()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    now = time.perf_counter()
    watch = RssWatch(proc.pid, rss_limit_mb, KILL_GRACE_SECONDS)
    return Launched(proc, log, now, now + limit, watch)


def reap_launched(run: Launched, timeout: float | None) -> bool:
    """Reap the run's process with os.wait4 (for its ru_maxrss) within `timeout`; True once reaped.
    Popen's own wait would reap it without the resource usage, so its returncode is set here."""
    if run.proc.returncode is not None:
        return True
    reaped = reap(run.proc.pid, timeout)
    if reaped is None:
        return False
    run.proc.returncode, run.peak_rss_mb = reaped
    if run.watch is not None:  # a descendant never waited for (killed launcher) escapes ru_maxrss
        run.peak_rss_mb = max(run.peak_rss_mb, run.watch.sampled_process_peak_mb)
    return True


def wait_for(run: Launched, times_path: Path) -> RunOutcome:
    """Wait for a launched run; past its deadline stop the whole group (SIGTERM, then SIGKILL) and keep
    the iterations it completed. The RSS watcher stops a run past its memory limit the same way."""
    proc, timed_out = run.proc, False
    try:
        if not reap_launched(run, max(0.0, run.deadline - time.perf_counter())):
            timed_out = True
            stop_process_group(run)
    except BaseException:  # Ctrl-C of the runner: leave nothing behind
        stop_process_group(run)
        raise
    finally:
        run.log.close()
        if run.watch is not None:
            run.watch.stop()
    elapsed = time.perf_counter() - run.started
    times = analysis.read_iteration_times(times_path) if times_path.is_file() else []
    cpu_path = times_path.with_name(CPU_TIMES_FILE)
    cpu_times = analysis.read_iteration_times(cpu_path) if cpu_path.is_file() else []
    rss_path = times_path.with_name(RSS_FILE)
    rss_mb = analysis.read_iteration_times(rss_path) if rss_path.is_file() else []
    over_memory = run.watch is not None and run.watch.tripped
    if over_memory:
        status = "rss limit"
    elif timed_out:
        status = "time limit"
    elif proc.returncode != 0:
        status = "failed"
    elif not times:
        status = "no iterations"
    else:
        status = "ok"
    stopped = timed_out or over_memory
    return RunOutcome(status, None if stopped else proc.returncode, elapsed, times, cpu_times,
                      run.peak_rss_mb, rss_mb)


def run_with_time_limit(cmd: list[str], cwd: Path, env: dict[str, str], limit: float, log_path: Path,
                        times_path: Path, rss_limit_mb: float | None = DEFAULT_RSS_LIMIT_MB) -> RunOutcome:
    """Run `cmd` alone under a time limit and an RSS limit (see wait_for)."""
    return wait_for(launch(cmd, cwd, env, limit, log_path, rss_limit_mb), times_path)


def stop_process_group(run: Launched) -> None:
    """SIGTERM the run's process group (the collector forwards it and flushes), then SIGKILL whatever
    is left of the group, children that outlived their parent included, and of the run's descendants in
    sessions of their own (the collector's training process)."""
    pid = run.proc.pid
    descendants = [p for p in process_tree(pid) if p != pid]
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    reap_launched(run, KILL_GRACE_SECONDS)
    for target in descendants:
        try:
            os.kill(target, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    reap_launched(run, None)
