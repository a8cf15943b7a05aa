"""In-process cross-rank checking: the job's own torch.distributed store, for the C++ exchange
(cpp/check/online/cross_rank_exchange.h; docs/analysis.md §Cross-rank checking in-process).

Why the job's default store and not a TCPStore of our own: every rank of a running job can already reach
it (torchrun's agent store, env:// or tcp:// rendezvous, multi-node included), it needs no port, address
or rendezvous of ours, and it lives exactly as long as the job. Our keys live under a prefix of our own
(PREFIX), so they never meet the job's. Only the store is used: never the training's collectives.
"""

from __future__ import annotations

import os
import sys

from traincheck import settings

PREFIX = "traincheck/cross_rank/"


def wanted() -> bool:
    """A job of several ranks launched with the environment torch.distributed reads (torchrun, env://),
    unless TRAINCHECK_CROSS_RANK=0."""
    if settings.value("TRAINCHECK_CROSS_RANK") == 0:
        return False
    try:
        return int(os.environ.get("WORLD_SIZE", "1")) > 1
    except ValueError:
        return False


def _env_int(name: str, default: int) -> int:
    try:
        return int(os.environ.get(name, ""))
    except ValueError:
        return default


def options() -> dict:
    """TRAINCHECK_CROSS_RANK_PEERS: ring neighbours compared (0, the default: chosen from the job's shape,
    cpp/check/online/cross_rank_topology.h); TRAINCHECK_CROSS_RANK_KEEP_STEPS: steps a summary stays in the
    store at least, more while a rank's kept summaries fit in 1 MiB (a peer further behind lags). The node's
    shape as the launcher gives it (torchrun: LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK; unknown: -1, 0, -1)."""
    return {"peers": settings.value("TRAINCHECK_CROSS_RANK_PEERS"),
            "keep_steps": settings.value("TRAINCHECK_CROSS_RANK_KEEP_STEPS"),
            "local_rank": _env_int("LOCAL_RANK", -1),
            "local_world_size": _env_int("LOCAL_WORLD_SIZE", 0),
            "node": _env_int("GROUP_RANK", -1)}


def find_store():
    """None until the job's default process group exists; then (store, rank, world_size), the store
    under PREFIX. Called by the exchange's I/O thread, whose calls are never recorded."""
    from traincheck import _core

    _core.set_inside_recorder(True)  # this thread's: the torch.distributed calls below are ours, not the script's
    dist = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return None
    from torch.distributed.distributed_c10d import _get_default_store

    return dist.PrefixStore(PREFIX, _get_default_store()), dist.get_rank(), dist.get_world_size()
