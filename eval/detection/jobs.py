"""Running the evaluation's commands: each in its own folder, with a time limit, its output in a log file,
its status recorded (`ok`, `time limit`, `failed`), and a one-line progress display."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Job:
    label: str                     # what the progress line shows
    command: list[str]
    log: Path                      # command line and merged output
    cwd: Path
    time_limit: float
    env: dict[str, str] = field(default_factory=dict)
    status: str = "pending"        # ok | time limit | failed | skipped
    returncode: int | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == "ok"


# Two processes on a 2-core machine would fight for cores if torch used all of them in each.
_SINGLE_THREAD_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def run_job(job: Job) -> Job:
    job.log.parent.mkdir(parents=True, exist_ok=True)
    job.cwd.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **_SINGLE_THREAD_ENV, **job.env}
    start = time.perf_counter()
    with open(job.log, "w") as log:
        log.write("$ " + " ".join(job.command) + "\n")
        log.flush()
        try:
            proc = subprocess.Popen(job.command, cwd=job.cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        except OSError as e:
            log.write(f"cannot start: {e}\n")
            job.status, job.seconds = "failed", 0.0
            return job
        try:
            job.returncode = proc.wait(timeout=job.time_limit)
            job.status = "ok" if job.returncode == 0 else "failed"
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            job.status = "time limit"
            log.write(f"\n[detection] stopped after its time limit of {job.time_limit:.0f} s\n")
    job.seconds = time.perf_counter() - start
    return job


def _kill_group(proc: subprocess.Popen) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=10)
            return
        except subprocess.TimeoutExpired:
            continue


class Progress:
    """`[phase] 12/40 label status 3.2s`, one line per finished job, on stderr."""

    def __init__(self, phase: str, total: int, stream=sys.stderr):
        self.phase, self.total, self.done, self.stream = phase, total, 0, stream
        self._lock = threading.Lock()

    def finished(self, job: Job) -> None:
        with self._lock:
            self.done += 1
            mark = "" if job.ok else f"  <-- {job.status}, see {job.log}"
            print(f"[{self.phase}] {self.done}/{self.total} {job.label} {job.status} {job.seconds:.1f}s{mark}",
                  file=self.stream, flush=True)


def run_all(jobs: list[Job], phase: str, workers: int = 1, on_done=None) -> list[Job]:
    """Runs independent jobs, `workers` at a time; returns them with their status filled in.
    `on_done(job)`, when given, runs as each job finishes (say, to mark a result as complete at once)."""
    progress = Progress(phase, len(jobs))

    def one(job: Job) -> Job:
        run_job(job)
        progress.finished(job)
        if on_done is not None:
            on_done(job)
        return job

    if workers <= 1:
        return [one(j) for j in jobs]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, jobs))
