"""Sharded parameters (DTensor: FSDP2's fully_shard, tensor parallelism) as the tracker sees them.

A rank holds only its shard of a DTensor parameter, and any torch op on the DTensor itself may run the
training's collectives. So the tracker digests and summarises the local shard (`local`), never the
DTensor, and names the variable after the shard it holds (`shard_suffix`): the ranks that hold the same
shard write the same var_name (the replicas that must agree, which a Consistency invariant learns to
pair), and ranks holding different shards never share one. On a mesh dimension that replicates the
parameter (HSDP's replicate dimension, DDP) the name does not change.
"""

from __future__ import annotations

import sys


def _dtensor_type():
    module = sys.modules.get("torch.distributed.tensor")  # never imported by us: no DTensor exists without it
    return getattr(module, "DTensor", None) if module is not None else None


def is_dtensor(t) -> bool:
    cls = _dtensor_type()
    return cls is not None and isinstance(t, cls)


def local(t):
    """This rank's shard of a DTensor (the leaf tensor it holds, not to_local()'s autograd view, whose
    .grad torch warns about); any other tensor as it is."""
    if not is_dtensor(t):
        return t
    held = getattr(t, "_local_tensor", None)
    return held if held is not None else t.to_local()


def shard_suffix(t) -> str:
    """'@shard(i,j)': this rank's coordinates on the mesh dimensions that shard `t`; '' when none does."""
    if not is_dtensor(t):
        return ""
    coordinate = t.device_mesh.get_coordinate()
    if coordinate is None:  # this rank is not in the parameter's mesh
        return ""
    dims = [d for d, placement in enumerate(t.placements) if placement.is_shard()]
    return "@shard(" + ",".join(str(coordinate[d]) for d in dims) + ")" if dims else ""
