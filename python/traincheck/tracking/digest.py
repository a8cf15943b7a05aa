"""Tensor digests computed on the tensor's own device, read by the host without waiting for the device.

- `full` (default): every element counts. The tensor's bits, as int64, are dotted with fixed odd
  pseudo-random weights in wrapping 64-bit arithmetic; a change of any single element changes the digest
  (the change times an odd weight is never 0 modulo 2^64). Equal tensors give equal digests in every
  process (the weights come from a fixed seed), so digests are comparable across DDP ranks and runs.
  Element i's weight is w[i mod P] * m(i // P) for a table w of P odd weights and odd block multipliers m
  (m(0) = 1), so the table stays P long whatever the tensor's size.
- `traincheck`: the original tool's hash, bit for bit (docs/collection.md §Tensor digests): floats scaled
  by 1e8 and truncated to int64 in the tensor's own dtype, reshaped to rows, and only row 0 hashed with
  h = h * 6364136223846793005 + x + 1. Here it is one dot product with precomputed powers of the
  multiplier, on the device, instead of a host copy and a numpy loop.

Host tensors (CPU, contiguous, a real dtype, exactly torch.Tensor or Parameter) are digested in place by
`_core.HostDigests`, all of a batch in one C++ call: one pass over their memory, no temporary, no torch op,
the same value the torch ops below give. Those ops take every other tensor: a device's, and a host tensor
that is strided with gaps, sparse or complex.

Memory: every tensor is taken in pieces of at most `_CHUNK` elements, on every device, so no temporary
is the size of a whole tensor (int64 copies of a 128k x 8k embedding would be gigabytes on a GPU that
has room for the training only); many small tensors are batched up to that size. What the digests hold
beyond the tensors is a few pieces' int64 temporaries and the weight table, tens of megabytes.

Reading: a batch's digests on the host (CPU tensors) are known at once: reading host memory waits for
nothing. A device's are copied into host memory without blocking, behind an event recorded on the
device's stream (`DigestBatch`); they are known once the event has completed, which is asked (`ready`),
never waited for, except by `wait` (at exit, when training is over). No call here makes the host wait for
the device: the weight table keeps a host copy of each device's, and segment layouts give their size.
"""

from __future__ import annotations

import torch

from traincheck import _core

ALGORITHMS = ("full", "traincheck")
_MULTIPLIER = 6364136223846793005
_MASK = (1 << 64) - 1


def _signed(x: int) -> int:
    x &= _MASK
    return x - (1 << 64) if x >= (1 << 63) else x


_BIT_VIEWS = {8: torch.int64, 4: torch.int32, 2: torch.int16, 1: torch.int8}

# Devices that hold no data (meta: shapes only, as a model is built before its weights are loaded): no
# queue to wait for and no values to copy; their digests read as 0.
_NO_QUEUE = ("meta",)

_CPU = torch.device("cpu")


def _host_widths() -> dict:
    """{dtype: the width in bytes its bits are read at}: the real dtypes `Digester._bit_view` reads, for
    those this torch has."""
    names = ("float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint64", "uint32",
             "uint16", "uint8", "bool", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz")
    dtypes = [getattr(torch, n) for n in names if isinstance(getattr(torch, n, None), torch.dtype)]
    return {d: d.itemsize for d in dtypes}


def _copy_done_event(device: torch.device):
    """An event recorded on `device`'s current stream behind the copies issued so far. torch.Event is the
    accelerator-neutral event (CUDA, XPU, MPS, ...)."""
    event = torch.Event(device=device)
    event.record()
    return event


def _host_buffer(like: torch.Tensor) -> torch.Tensor:
    """Host memory for a device's digests: pinned where the accelerator offers it, so that a copy into it
    is asynchronous (into pageable memory CUDA copies synchronously)."""
    try:
        return torch.empty(like.shape, dtype=like.dtype, pin_memory=True)
    except RuntimeError:  # no pinned-memory allocator for this device
        return torch.empty(like.shape, dtype=like.dtype)


class DigestBatch:
    """The digests of one batch of tensors, in the order given. Host tensors' are known when the batch is
    made; each device's are being copied into host memory behind an event. `ready()` asks the events and
    never waits; `values` may be read once it returned True (or after `wait()`). The host reads copies
    the device has finished writing: no read here waits for the device."""

    __slots__ = ("values", "_copies")

    def __init__(self, n: int):
        self.values = [0] * n
        self._copies: list[tuple[list[int], torch.Tensor, object]] = []  # (indices, host copy, event)

    def add(self, order: list[int], digests: torch.Tensor, device: torch.device) -> None:
        if device.type == "cpu":
            self._take(order, digests)
            return
        if device.type in _NO_QUEUE:
            self._take(order, torch.zeros(digests.shape, dtype=digests.dtype))
            return
        host = _host_buffer(digests)
        host.copy_(digests, non_blocking=True)
        self._copies.append((order, host, _copy_done_event(device)))

    def ready(self) -> bool:
        if self._copies and all(event.query() for _, _, event in self._copies):
            for order, host, _ in self._copies:
                self._take(order, host)
            self._copies = []
        return not self._copies

    def wait(self) -> None:
        """Blocks until every copy is done: for the end of training, never a step."""
        for _, _, event in self._copies:
            event.synchronize()
        self.ready()

    def _take(self, order: list[int], host: torch.Tensor) -> None:
        for i, v in zip(order, host.tolist()):
            self.values[i] = v


class Digester:
    def __init__(self, algorithm: str = "full"):
        if algorithm not in ALGORITHMS:
            raise ValueError(f"unknown tensor hash {algorithm!r}; expected one of {ALGORITHMS}")
        self.algorithm = algorithm
        self._weights: dict[torch.device, torch.Tensor] = {}
        self._host_weights: dict[torch.device, torch.Tensor] = {}  # each device's table, as a host tensor
        self._powers: dict[tuple[torch.device, int], torch.Tensor] = {}
        self._layouts: dict[tuple, tuple[torch.Tensor, torch.Tensor]] = {}
        self._in_place = algorithm == "full"  # host tensors digested by _core.HostDigests
        self._host = None

    # -- full-coverage digest -------------------------------------------------------------------------
    # Elements per piece: a digest's temporaries are a few int64 copies of one piece (4 MiB each), inside
    # the 64 MB bound with room to spare; pieces that large let a device digest a large tensor in few
    # launches (a piece costs about six ops). It divides _TABLE: a piece never spans two blocks.
    _CHUNK = 1 << 19
    # The original's hash makes more temporaries per piece (a float product, int64 copies, powers): its
    # pieces are half that.
    _HASH_CHUNK = 1 << 18
    _TABLE = 1 << 20  # P: weights in the table (8 MiB), the period of the block multipliers

    def _weights_for(self, n: int, device: torch.device) -> torch.Tensor:
        """The table's first n weights (n <= _TABLE)."""
        w = self._weights.get(device)
        if w is None or w.numel() < n:
            size = min(max(n, 2 * (w.numel() if w is not None else 0), 1024), self._TABLE)
            g = torch.Generator().manual_seed(0x7C3A)
            w = torch.randint(-(1 << 62), 1 << 62, (size,), generator=g, dtype=torch.int64)
            # Weights for a prefix stay the same when the cache grows: digests never depend on history.
            old = self._host_weights.get(device)
            if old is not None:
                w[: old.numel()] = old
            w |= 1
            self._host_weights[device] = w
            w = self._weights[device] = w.to(device)
        return w[:n]

    @staticmethod
    def _block_multiplier(block: int) -> int:
        """m(block): 1 for the first _TABLE elements, then an odd 64-bit number per block (splitmix64)."""
        if block == 0:
            return 1
        z = (block * 0x9E3779B97F4A7C15) & _MASK
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        return _signed((z ^ (z >> 31)) | 1)

    def _full(self, t: torch.Tensor) -> torch.Tensor:
        bits = self._bit_view(t)
        n = bits.numel()
        if n <= self._CHUNK:
            return (bits.to(torch.int64) * self._weights_for(n, bits.device)).sum()
        total = torch.zeros((), dtype=torch.int64, device=bits.device)
        for start in range(0, n, self._CHUNK):  # _CHUNK divides _TABLE: a piece never spans two blocks
            end = min(start + self._CHUNK, n)
            block, offset = divmod(start, self._TABLE)
            weights = self._weights_for(offset + end - start, bits.device)[offset:]
            piece = (bits[start:end].to(torch.int64) * weights).sum()
            # Its block's multiplier factors out of the piece's sum (the sum is taken modulo 2^64).
            m = self._block_multiplier(block)
            total += piece if m == 1 else piece * m
        return total

    # Tensors up to this many elements are digested in batches (one concatenation per batch).
    _SMALL = 1 << 16

    def _bit_view(self, t: torch.Tensor) -> torch.Tensor:
        flat = t.detach().reshape(-1)
        if flat.is_complex():
            flat = torch.view_as_real(flat).reshape(-1)
        return flat if flat.dtype == torch.bool else flat.view(_BIT_VIEWS[flat.element_size()])

    def _full_small_batch(self, group: list[torch.Tensor], sizes: list[int], dtype: torch.dtype) -> torch.Tensor:
        """Digests of many small strided tensors of one dtype on one device in a handful of ops, whatever
        their number: their elements laid end to end in one C++ call (torch's flatten_dense_tensors, a
        single concatenation on a device), one bit view, one product with the per-tensor weights laid end
        to end, one segment sum. Every tensor still gets the weights of its own positions, so each result
        equals _full of that tensor. No Python per tensor: on a GPU the host pays a few launches per batch."""
        device = group[0].device
        key = (device, tuple(sizes))
        layout = self._layouts.get(key)
        if layout is None:
            weights = torch.cat([self._weights_for(n, device) for n in sizes])
            # output_size: a device would otherwise be asked for the repeats' sum (a blocking read).
            segments = torch.repeat_interleave(torch.arange(len(sizes), device=device), torch.tensor(sizes, device=device),
                                               output_size=sum(sizes))
            layout = self._layouts[key] = (weights, segments)
        weights, segments = layout
        flat = torch._utils._flatten_dense_tensors(group)  # each tensor's elements in order, as reshape(-1)
        bits = flat if dtype == torch.bool else flat.view(_BIT_VIEWS[flat.element_size()])
        products = bits.to(torch.int64) * weights
        return torch.zeros(len(sizes), dtype=torch.int64, device=device).index_add_(0, segments, products)

    # -- the original's hash --------------------------------------------------------------------------
    def _powers_for(self, n: int, device: torch.device) -> torch.Tensor:
        key = (device, n)
        p = self._powers.get(key)
        if p is None:
            values, acc = [], 1
            for _ in range(n):
                values.append(_signed(acc))
                acc = (acc * _MULTIPLIER) & _MASK
            p = torch.tensor(values[::-1], dtype=torch.int64, device=device)  # M^(n-1-c) for column c
            self._powers[key] = p
        return p

    def _traincheck(self, t: torch.Tensor) -> torch.Tensor:
        x = t.detach()
        if x.dim() == 0:
            return (x * 1e8).to(torch.int64) + 1 if x.is_floating_point() else x.to(torch.int64) + 1
        row = x.reshape(-1, x.shape[-1])[0] if x.dim() > 1 else x  # only row 0 counts: scaled alone
        n = row.numel()
        total = torch.zeros((), dtype=torch.int64, device=row.device)
        for start in range(0, n, self._HASH_CHUNK):
            end = min(start + self._HASH_CHUNK, n)
            piece = row[start:end]
            # In the source dtype, as the original (f16 overflows there too); it rejects bool and complex,
            # ours hashes bools as 0/1.
            piece = (piece * 1e8).to(torch.int64) if piece.is_floating_point() else piece.to(torch.int64)
            # Column c's power is M^(n-1-c) = M^(n-end) * M^(end-1-c): a piece's powers times one scalar.
            scale = _signed(pow(_MULTIPLIER, n - end, 1 << 64))
            powers = self._powers_for(end - start, row.device)
            total += ((piece + 1) * (powers if scale == 1 else powers * scale)).sum()
        return total

    # -- batches ----------------------------------------------------------------------------------------
    def digests(self, tensors: list[torch.Tensor]) -> list[int]:
        """One digest per tensor, waiting for the device where there is one (not on the training thread:
        the tracker takes `digests_later`)."""
        batch = self.digests_later(tensors)
        batch.wait()
        return batch.values

    def digests_later(self, tensors: list[torch.Tensor]) -> DigestBatch:
        """One digest per tensor, computed on each tensor's device; the host tensors' known at once, a
        device's once their copy to host memory is done (DigestBatch)."""
        batch = DigestBatch(len(tensors))
        with torch.no_grad():
            rest = range(len(tensors))
            if self._in_place and tensors:
                batch.values, rest = self._host_digests().digests(list(tensors), self._weights_for(self._TABLE, _CPU))
            by_device: dict[torch.device, list[int]] = {}
            for i in rest:
                by_device.setdefault(tensors[i].device, []).append(i)
            for device, idx in by_device.items():
                order, parts = self._device_digests(tensors, idx)
                batch.add(order, torch.cat(parts), device)
        return batch

    def _host_digests(self):
        if self._host is None:
            self._host = _core.HostDigests(torch.Tensor, torch.nn.Parameter, torch.strided, _host_widths(), torch.int64)
        return self._host

    def _device_digests(self, tensors: list[torch.Tensor], idx: list[int]) -> tuple[list[int], list[torch.Tensor]]:
        """(tensor indices, 1-d digest tensors in that order) for the tensors of one device."""
        if self.algorithm != "full":
            return idx, [torch.stack([self._one(tensors[i], self._traincheck) for i in idx])]
        order, parts, singles = [], [], []
        groups: dict[torch.dtype, tuple[list[int], list[int]]] = {}  # dtype -> (tensor indices, sizes)
        small = min(self._SMALL, self._CHUNK)
        for i in idx:
            t = tensors[i]
            dtype, n = t.dtype, t.numel()
            if n > small or dtype.is_complex or t.layout != torch.strided:
                singles.append(i)
                continue
            members, sizes = groups.setdefault(dtype, ([], []))
            members.append(i)
            sizes.append(n)
        for dtype, (members, sizes) in groups.items():  # small tensors of one dtype: batched, _CHUNK at most
            start, total = 0, 0
            for k in range(len(members) + 1):
                if k < len(members) and (total == 0 or total + sizes[k] <= self._CHUNK):
                    total += sizes[k]
                    continue
                order += members[start:k]
                parts.append(self._full_small_batch([tensors[i] for i in members[start:k]], sizes[start:k], dtype))
                start, total = k, (sizes[k] if k < len(members) else 0)
        if singles:
            order += singles
            parts.append(torch.stack([self._one(tensors[i], self._full) for i in singles]))
        return order, parts

    @staticmethod
    def _one(t: torch.Tensor, digest) -> torch.Tensor:
        """`digest(t)`, on t's device. A sparse tensor (nn.Embedding(sparse=True)'s gradient) has no strided
        storage to view: its digest combines those of its coalesced indices and values (one layout per value,
        so equal tensors digest equally however their entries were ordered), in the memory they take, never
        densified; int64 arithmetic wraps as the digests' sums do."""
        if t.layout == torch.strided:
            return digest(t)
        c = t.detach().coalesce()
        return digest(c.indices()) * _signed(_MULTIPLIER) + digest(c.values())
