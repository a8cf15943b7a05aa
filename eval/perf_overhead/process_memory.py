"""Memory of a run's processes: the resident set of a process group sampled from /proc, a watcher thread
that stops a group whose resident set passes a limit, and reaping with `os.wait4` for the peak.

Why two measures. The peak the evaluation reports is the kernel's `ru_maxrss` from `os.wait4(pid)`: the
largest resident set of the child or any descendant it waited for (the collector waits for its launcher,
which waits for the training process), exact, never missed between samples. It is only known at the end,
and it misses a descendant that its parent never waited for (a run stopped by a limit: the launcher's
shell dies before it reaps the training process), so the watcher's samples of the largest process
complete it (`peak_mb`). The limit that protects the machine is enforced by sampling: every `SAMPLE_SECONDS` the
watcher sums VmRSS over the run's process and all its descendants (found by parent pid: the collector
starts the training process in a session of its own, so the run's process group does not hold it),
which also works while the lockstep runner has several runs alive at once (one watcher per run).
"""
from __future__ import annotations

import os
import signal
import threading
import time

SAMPLE_SECONDS = 0.25
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
MIB = 1024 * 1024


def process_rss_mb(pid: int) -> float | None:
    """Resident set of one process in MiB (/proc/<pid>/statm), None when it is gone."""
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * PAGE_BYTES / MIB
    except (OSError, IndexError, ValueError):
        return None


def parent_pids() -> dict[int, int]:
    """pid -> parent pid of every process (field 4 of /proc/<pid>/stat)."""
    parents = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # The command name (field 2) is in parentheses and may hold spaces: split after its last ')'.
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 1:
            parents[int(entry)] = int(fields[1])
    return parents


def process_tree(root: int) -> list[int]:
    """`root` and its living descendants."""
    children: dict[int, list[int]] = {}
    for pid, parent in parent_pids().items():
        children.setdefault(parent, []).append(pid)
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, []))
    return tree


def tree_rss_mb(root: int) -> dict[int, float]:
    """Resident set in MiB of `root` and of each of its descendants."""
    sizes = {pid: process_rss_mb(pid) for pid in process_tree(root)}
    return {pid: rss for pid, rss in sizes.items() if rss is not None}


class RssWatch:
    """Samples the resident set of a run (its process, the leader of process group `pgid`, and its
    descendants) in a thread; past `limit_mb` it SIGTERMs the group and the descendants, then SIGKILLs
    them `kill_grace` seconds later. It never reaps: the runner's `reap` does."""

    def __init__(self, pgid: int, limit_mb: float | None, kill_grace: float):
        self.pgid, self.limit_mb, self.kill_grace = pgid, limit_mb, kill_grace
        self.sampled_group_peak_mb = 0.0  # summed over the process tree (what the limit applies to)
        self.sampled_process_peak_mb = 0.0  # the largest single process (comparable to ru_maxrss)
        self.tripped = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"rss-watch-{pgid}", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(SAMPLE_SECONDS):
            sizes = tree_rss_mb(self.pgid)
            rss = sum(sizes.values())
            self.sampled_group_peak_mb = max(self.sampled_group_peak_mb, rss)
            self.sampled_process_peak_mb = max([self.sampled_process_peak_mb, *sizes.values()])
            if self.limit_mb is not None and rss > self.limit_mb and not self.tripped:
                self.tripped = True
                tree = list(sizes)
                self._signal(signal.SIGTERM, tree)
                if not self._stop.wait(self.kill_grace):
                    self._signal(signal.SIGKILL, tree)
                return

    def _signal(self, sig: int, tree: list[int]) -> None:
        try:
            os.killpg(self.pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        for pid in tree:  # descendants in sessions of their own (the collector's training process)
            if pid == self.pgid:
                continue
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def reap(pid: int, timeout: float | None) -> tuple[int, float] | None:
    """Wait for child `pid` up to `timeout` seconds (None: for ever). Returns (exit code as
    subprocess reports it, ru_maxrss in MiB) or None if it is still running."""
    deadline = None if timeout is None else time.monotonic() + timeout
    delay = 0.005
    while True:
        waited, status, usage = os.wait4(pid, os.WNOHANG)
        if waited == pid:
            return os.waitstatus_to_exitcode(status), usage.ru_maxrss / 1024  # Linux: KiB
        if deadline is not None and time.monotonic() >= deadline:
            return None
        time.sleep(delay if deadline is None else min(delay, max(0.0, deadline - time.monotonic())))
        delay = min(delay * 2, 0.05)
