"""The collector's claim on its --output-dir: one run at a time, and never on top of an earlier run.

Two collects writing one folder at once, or a rerun into an old folder, merged their traces (the analyzers
read every trace_* file there: 46 invariants reported instead of 16). So:
- a folder that another traincheck-collect is writing is refused: each run holds an exclusive flock on
  <output-dir>/.traincheck_collect.lock until its program ends (released by the kernel however the
  collector ends, SIGKILL included, so a crashed run never leaves the folder locked);
- a folder holding an earlier run's files is refused unless --overwrite, which removes those files (and
  only those: a user's own files in the folder stay).

The original writes into an existing folder silently (docs/differences.md §Collection).
"""

from __future__ import annotations

import errno
import fcntl
import fnmatch
import os
import shutil

LOCK_NAME = ".traincheck_collect.lock"

# What a collect run writes into its output folder (docs/formats.md §traincheck-collect).
RUN_FILES = ("trace_*", "proxy_log.json", "env_dump.txt", "instr_opts.json", "instrumentation_summary_*.json",
             "api_signatures.json", ".api_signatures.lock", "api_signatures.json.*.tmp", "program_output.txt",
             "program_stdout.txt", "program_stderr.txt", "_traincheck_*", "traincheck_recorder_*.log", "online_check")


class FolderRefused(Exception):
    pass


class _Claim:
    """The held lock; a context manager that releases it."""

    def __init__(self, fd: int):
        self.fd = fd

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        os.close(self.fd)


def earlier_run_files(folder: str) -> list[str]:
    return sorted(name for name in os.listdir(folder) if any(fnmatch.fnmatchcase(name, p) for p in RUN_FILES))


def claim(folder: str, overwrite: bool) -> _Claim:
    """Locks `folder` for this run and clears an earlier run's files when `overwrite`; raises FolderRefused
    (its message one line, naming the folder and what to do) when another collect holds it or an earlier
    run's files are there without `overwrite`."""
    path = os.path.join(folder, LOCK_NAME)
    try:  # O_NOFOLLOW: a link planted under the lock's name would have the pid written through it
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise FolderRefused(f"{path} is a symbolic link; refusing to write through it (remove it, or give "
                                "another --output-dir)") from None
        raise
    try:
        if os.fstat(fd).st_nlink > 1:  # another name of the same file: the pid would land there too
            raise FolderRefused(f"{path} has other hard links; refusing to write through them (remove it, or give "
                                "another --output-dir)")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            raise FolderRefused(f"{folder} is in use by another traincheck-collect (pid {holder}); "
                                "give this run another --output-dir") from None
        earlier = earlier_run_files(folder)
        if earlier and not overwrite:
            shown = ", ".join(earlier[:4]) + (f" and {len(earlier) - 4} more" if len(earlier) > 4 else "")
            raise FolderRefused(f"{folder} holds an earlier run's files ({shown}); pass --overwrite to replace "
                                "them, or give another --output-dir")
        for name in earlier:
            target = os.path.join(folder, name)
            if os.path.isdir(target) and not os.path.islink(target):
                shutil.rmtree(target)
            else:
                os.remove(target)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    except BaseException:
        os.close(fd)
        raise
    return _Claim(fd)
