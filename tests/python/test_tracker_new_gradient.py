"""A new gradient tensor is always seen as a change, even when it gets the freed one's id, data address and
version (what the tracker's signature once held): Lightning's optimizer closure sets the gradient to None
and backward makes a new one inside Adam.step; when the allocator and Python handed the new one the old
one's address and id, the tracker kept the old digest, and "Adam.step changes the gradient" failed on a
correct run (seen once in CI, under load)."""

import torch

from traincheck.tracking.tracker import ModelTracker


class RecordingCore:
    """The recorder calls ModelTracker makes, kept: the digests written per variable name."""

    def __init__(self):
        self.names: dict[str, int] = {}
        self.data_digests: list[tuple[int, object]] = []
        self.grad_digests: list[tuple[int, object]] = []
        self.grad_resets: list[dict | None] = []  # per dump: name id -> claim, or None (no claims)
        self.model_training: list[dict | None] = []
        self.optimizer_has_gradients: list[dict | None] = []
        self.grad_reset_once: list[dict | None] = []
        self.grad_clipped: list[dict | None] = []
        self.claims: list[dict | None] = []  # per dump: the claims argument as passed

    def intern(self, text):
        return self.names.setdefault(text, len(self.names) + 1)

    def is_recording(self):
        return True

    def set_inside_recorder(self, value):
        return False

    def record_var_states(self, name_ids, tensors, data_digests, grad_digests, var_type, mode, dump_loc,
                          claims=None):
        self.data_digests.extend(zip(name_ids, data_digests))
        self.grad_digests.extend(zip(name_ids, grad_digests))
        self.claims.append(claims)
        claims = claims or {}  # as the binding reads it: a claim left out is made for no tensor
        for name, kept in (("grad_reset", self.grad_resets), ("model_training", self.model_training),
                           ("optimizer_has_gradients", self.optimizer_has_gradients),
                           ("grad_reset_once", self.grad_reset_once), ("grad_clipped", self.grad_clipped)):
            made = claims.get(name)
            kept.append(None if made is None else dict(zip(name_ids, made)))


def test_a_new_gradient_with_the_old_ones_signature_is_digested_again():
    core = RecordingCore()
    tracker = ModelTracker(core, style="sampler")
    w = torch.nn.Parameter(torch.ones(4))
    w.grad = torch.full((4,), 1.0)
    tracker.track(w, "w")
    first = core.grad_digests[-1][1]
    assert first is not None

    # The cheap signature cannot tell the new gradient from the old one (same address and version, as when
    # the allocator and Python reuse them): a detached alias shares both, and its data is rewritten through
    # `.data`, which bumps no version counter.
    new = w.grad.detach()
    new.data.fill_(2.0)
    w.grad = new
    core.grad_digests.clear()
    tracker.around_api("torch.optim.adam.Adam.step", "post")
    assert [d for _, d in core.grad_digests] and core.grad_digests[-1][1] not in (None, first)

    # The same gradient again: nothing changed, nothing written.
    core.grad_digests.clear()
    tracker.around_api("torch.optim.adam.Adam.step", "post")
    assert core.grad_digests == []

    # Set to None: written as None.
    w.grad = None
    tracker.around_api("torch.optim.optimizer.Optimizer.zero_grad", "post")
    assert core.grad_digests[-1][1] is None
