"""A stand-in for a GPU on a machine without one: tensors on the `meta` device play the device's, and
`BlockingReads` counts every blocking device-to-host read that code of the traincheck package makes.

A blocking read is what makes the host wait for the device: `_local_scalar_dense` (`item()`, `bool()`,
`int()` of a device tensor), a copy of a device tensor into host memory without `non_blocking`
(`tolist()`, `cpu()`, `to("cpu")`, `copy_`), which on a GPU drains the device queue first. A read counts
as the tool's when a frame of the traincheck package is on the Python stack; the user's own reads are
the user's business.

Meta tensors hold no data, so the reads are also emulated (zeros), and training runs as it would on a
device: the digests written are then meaningless, what is counted is whether the tool waited. On a real
device (cuda) the reads are counted the same way and made as asked."""

from __future__ import annotations

import os
import sys

import torch
from torch.utils._python_dispatch import TorchDispatchMode

aten = torch.ops.aten


def _traincheck_dir() -> str:
    import traincheck

    return os.path.dirname(os.path.abspath(traincheck.__file__)) + os.sep


def _is_device(t) -> bool:
    return isinstance(t, torch.Tensor) and t.device.type != "cpu"


def _is_meta(t) -> bool:
    return isinstance(t, torch.Tensor) and t.device.type == "meta"


def _is_host(device) -> bool:
    return device is not None and torch.device(device).type == "cpu"


class BlockingReads(TorchDispatchMode):
    """Counts the tool's blocking reads of meta ("device") tensors; `reads` lists (op, innermost tool frame)."""

    def __init__(self):
        super().__init__()
        self.reads: list[tuple[str, str]] = []
        self._tool = _traincheck_dir()

    def _tool_frame(self) -> str | None:
        frame = sys._getframe(2)
        while frame is not None:
            name = frame.f_code.co_filename
            if name.startswith(self._tool):
                return f"{os.path.basename(name)}:{frame.f_lineno}"
            frame = frame.f_back
        return None

    def _count(self, op: str) -> None:
        where = self._tool_frame()
        if where is not None:
            self.reads.append((op, where))

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is aten._local_scalar_dense.default and _is_device(args[0]):
            self._count("_local_scalar_dense")
            if _is_meta(args[0]):
                return False if args[0].dtype == torch.bool else 0 if not args[0].is_floating_point() else 0.0
        elif func is aten._to_copy.default and _is_device(args[0]) and _is_host(kwargs.get("device")):  # to(dtype): no
            if not kwargs.get("non_blocking", False):
                self._count("_to_copy")
            if _is_meta(args[0]):
                return torch.zeros(args[0].shape, dtype=kwargs.get("dtype") or args[0].dtype)
        elif func is aten.copy_.default and not _is_device(args[0]) and _is_device(args[1]):
            non_blocking = args[2] if len(args) > 2 else kwargs.get("non_blocking", False)
            if not non_blocking:
                self._count("copy_")
            if _is_meta(args[1]):
                return args[0].zero_()
        return func(*args, **kwargs)
