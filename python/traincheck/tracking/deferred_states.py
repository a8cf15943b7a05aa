"""The tracker's state writes whose digests a device is still copying to host memory: held, never waited for.

A write (`record_var_states`) is encoded at once by the recorder, with its tensors' summaries, claims,
time, step and meta-vars (`hold=True`), and emitted when every digest it carries is known
(`release_var_states`): its records are those it would have made at once. Writes are emitted in the order
they were made: while one is held, later writes are held behind it, so a trace_VAR file keeps its order.
Digests on the host are known at once; with no write held, a write goes straight to the recorder, as
before, and costs one test here.

A digest not yet known is a `Pending` (its batch and position) in the tracker's table (TrackedParams, by
digest code: a slot's data or gradient digest), until a later write or step boundary finds its batch ready (`DigestBatch.ready`: the copy's event has completed, asked
without waiting) and puts the value in its place. `release_ready` runs at each write and step boundary;
`drain` waits for the device, once, at the end of training.

Both run on the training thread: it asks the events and reads the copies' host memory once they are
done (no wait for the device), and emits the held writes. os._exit and SIGTERM shut the recorder down
without draining: writes still held then (at most the last step's, on a device) are not written.
"""

from __future__ import annotations

from collections import deque

from traincheck.tracking.digest import DigestBatch


class Pending:
    """Digest `index` of `batch`, not known when it was assigned."""

    __slots__ = ("batch", "index")

    def __init__(self, batch: DigestBatch, index: int):
        self.batch = batch
        self.index = index


def _known(values: list) -> list:
    return [v.batch.values[v.index] if type(v) is Pending else v for v in values]


class DeferredStates:
    def __init__(self, core):
        self.core = core
        self._held: deque = deque()  # (HeldVarStates, data digests, grad digests, batches), oldest first
        self._unknown: list = []     # (table, digest code, Pending) assigned and not yet known
        self._batches: list[DigestBatch] = []  # batches whose digests are still on their way

    def assign(self, table, codes: list[int], batch: DigestBatch) -> None:
        """Put digest i of `batch` into digest `codes[i]` of `table` (TrackedParams): its value when known,
        else a Pending until it is."""
        if batch.ready():
            table.set_digests(codes, batch.values)
            return
        self._batches.append(batch)
        pending = [Pending(batch, i) for i in range(len(codes))]
        table.set_digests(codes, pending)
        self._unknown.extend(zip([table] * len(codes), codes, pending))

    def record_var_states(self, name_ids, tensors, data_digests, grad_digests, var_type, mode, dump_loc, claims):
        """The recorder's record_var_states, held while a digest it carries, or an earlier write, is unknown."""
        if not self._batches and not self._held:  # every digest known: the write goes out as it is
            self.core.record_var_states(name_ids, tensors, data_digests, grad_digests, var_type, mode, dump_loc, claims)
            return
        self.release_ready()
        if not self._batches and not self._held:  # the last copies are done: no write waits any more
            self.core.record_var_states(name_ids, tensors, _known(data_digests), _known(grad_digests), var_type,
                                        mode, dump_loc, claims)
            return
        held = self.core.record_var_states(name_ids, tensors, data_digests, grad_digests, var_type, mode, dump_loc,
                                           claims, hold=True)
        if held is not None:
            self._held.append((held, data_digests, grad_digests, list(self._batches)))

    def release_ready(self) -> None:
        """Emit, oldest first, the held writes whose digests are all known now; never waits."""
        if not self._batches and not self._held:
            return
        previous = self.core.set_inside_recorder(True)  # the events' torch calls are the tool's, not traced
        try:
            if self._batches:
                self._settle()
            while self._held:
                held, data, grad, batches = self._held[0]
                if not all(b.ready() for b in batches):
                    return
                self.core.release_var_states(held, _known(data), _known(grad))
                self._held.popleft()
        finally:
            self.core.set_inside_recorder(previous)

    def drain(self) -> None:
        """Wait for every copy and emit every held write: the end of training (atexit), not a step."""
        previous = self.core.set_inside_recorder(True)
        try:
            for batch in self._batches:
                batch.wait()
        finally:
            self.core.set_inside_recorder(previous)
        self.release_ready()

    def _settle(self) -> None:
        """Digests whose copy is done replace their Pending on the entries that still hold it."""
        self._batches = [b for b in self._batches if not b.ready()]
        unknown = []
        for table, code, pending in self._unknown:
            if pending.batch.ready():
                if table.digest(code) is pending:  # not replaced by a later digest since
                    table.set_digest(code, pending.batch.values[pending.index])
            else:
                unknown.append((table, code, pending))
        self._unknown = unknown
