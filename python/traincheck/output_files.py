"""Output files that are never written through a link: every file the collector writes into its output
folder is opened here (the native side's rule, cpp/common/output_file.h).

A symbolic link planted in the output folder under an output's name (program_output.txt -> ~/.bashrc)
would otherwise make a run overwrite any file its user can write. So the file's own name must not be a
symbolic link (O_NOFOLLOW), nor a regular file with other hard links; either raises OutputRefused (an
OSError, so that every handler of a failed write handles it too) naming the path, and nothing is written.
The folders on the way are not checked: an output folder that is a link is where the user pointed the tool.
"""

from __future__ import annotations

import errno
import itertools
import os
import shutil
import stat

_counter = itertools.count()


class OutputRefused(OSError):
    pass


def refused(path: str, code: int = errno.ELOOP) -> OutputRefused:
    """The error for `path`: a symbolic link (ELOOP) or a file with other hard links (EMLINK)."""
    what = "is a symbolic link" if code == errno.ELOOP else "has other hard links"
    e = OutputRefused(code, f"{path} {what}; refusing to write through it (remove it, or choose another output)")
    e.filename = path
    return e


def open_output_fd(path: str, mode: str = "w", exclusive: bool = False) -> int:
    """A descriptor of `path` opened for writing: mode "w" empties it, "a" appends; `exclusive`: it must not
    exist yet. Raises OutputRefused for a link, OSError for any other failure."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    if mode == "a":
        flags |= os.O_APPEND
    if exclusive:
        flags |= os.O_EXCL
    try:
        fd = os.open(path, flags, 0o644)  # not O_TRUNC: a hard-linked file is refused before any of it is lost
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise refused(path, errno.ELOOP) from None
        raise
    try:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
            raise refused(path, errno.EMLINK)
        if mode == "w" and stat.S_ISREG(st.st_mode) and st.st_size:
            os.ftruncate(fd, 0)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_output(path: str, mode: str = "w", exclusive: bool = False, **kwargs):
    """open(path, mode) under the rules above; mode is one of w, wb, a, ab (text modes take open's
    encoding arguments)."""
    fd = open_output_fd(path, mode[0], exclusive)
    try:
        return os.fdopen(fd, mode, **kwargs)
    except BaseException:
        os.close(fd)
        raise


def replace_output(path: str, text: str | bytes) -> None:
    """`text` as the whole content of `path`, written to a new file beside it and renamed over it (a reader
    sees the old file or the new one). A symbolic link at `path` is refused, not replaced."""
    if os.path.islink(path):
        raise refused(path, errno.ELOOP)
    tmp = f"{path}.{os.getpid()}.{next(_counter)}.tmp"
    f = open_output(tmp, "wb" if isinstance(text, bytes) else "w", exclusive=True)
    try:
        with f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:  # a full disk must not leave a half-written temporary file behind
            os.remove(tmp)
        except OSError:
            pass
        raise


def copy_file(src: str, dst: str) -> str:
    """shutil.copy2 that writes `dst` under the rules above (a copy_function for shutil.copytree)."""
    with open(src, "rb") as fin, open_output(dst, "wb") as fout:
        shutil.copyfileobj(fin, fout)
    shutil.copystat(src, dst, follow_symlinks=False)
    return dst
