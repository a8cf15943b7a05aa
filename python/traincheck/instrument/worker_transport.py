"""Nothing is recorded while the main process takes DataLoader worker results off their queue
(docs/collection.md §Determinism).

With `num_workers > 0`, batches arrive when the workers finish them: a step may receive two or none
(out-of-order arrivals are kept for later), and receiving one unpickles its tensors from shared memory
(`rebuild_storage_fd`, `_rebuild_tensor`, `torch.empty`, ...). Recorded, how many of these calls fall in
each step followed the workers' timing, so two runs of one program gave different traces and different
verdicts (docs/collection.md §Determinism). `_MultiProcessingDataLoaderIter._get_data` and `_try_get_data` are never
wrapped (rules.TIMING_DEPENDENT_APIS), and this module turns the thread's recording off inside them. What
the program does with each batch (`_next_data`, `_process_data`, the training itself) is recorded as
before, once per batch, in the step that consumes it.
"""

from __future__ import annotations

import functools

from traincheck import post_import

_DATALOADER = "torch.utils.data.dataloader"
_METHODS = ("_get_data", "_try_get_data")


def pause_recording_in_worker_transport(core) -> None:
    post_import.after_import(_DATALOADER, lambda module: _patch(core, module))


def _patch(core, module) -> None:
    cls = getattr(module, "_MultiProcessingDataLoaderIter", None)
    for name in _METHODS:
        method = vars(cls).get(name) if cls is not None else None
        if method is None or getattr(method, "__traincheck_unrecorded__", False):
            continue
        setattr(cls, name, _unrecorded(core, method))


def _unrecorded(core, method):
    @functools.wraps(method)
    def call(*args, **kwargs):
        was_inside = core.set_inside_recorder(True)
        try:
            return method(*args, **kwargs)
        finally:
            core.set_inside_recorder(was_inside)

    call.__traincheck_unrecorded__ = True
    return call
