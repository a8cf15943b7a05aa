"""The model tracker's write at an optimizer step as it was in Python (one iteration per parameter), kept
only as step_claims_cost.py's baseline: the check that each parameter is still its module's, signatures,
change detection, the gradient references, the write's lists and the claims at the step, over the same
parameters, into the same dropping recorder.
Digests of what changed are taken with the tracker's own Digester, as the tracker does."""

from __future__ import annotations

import weakref

import torch

from traincheck.tracking import shards

_GRACE_STEPS = 5


class Entry:
    __slots__ = ("name_id", "param", "owner", "attr", "model", "signature", "data_digest", "grad_digest", "grad_ref", "resets",
                 "discards", "grad_since_reset", "clips", "clip_ref", "clip_version", "steps", "grad_steps",
                 "trained_by")

    def __init__(self, name_id, param, owner, attr, model):
        self.name_id, self.param, self.owner, self.attr, self.model = name_id, param, owner, attr, model
        self.signature = self.data_digest = self.grad_digest = self.grad_ref = self.clip_ref = None
        self.resets = self.discards = self.clips = self.clip_version = 0
        self.grad_since_reset = False
        self.steps, self.grad_steps, self.trained_by = {}, set(), set()

    def claims_at_step(self, key):
        ref = self.grad_ref
        last = self.steps.get(key)
        self.steps[key] = (ref, self.resets, self.discards, self.clips)
        clipped = None
        if ref is not None and self.clips > (0 if last is None else last[3]):
            g = ref()
            clipped = ref is self.clip_ref and g is not None and g._version == self.clip_version
        if ref is None or last is None or last[0] is None:
            return None, None, clipped
        return ref is not last[0] or last[1] != self.resets, self.discards - last[2] <= 1, clipped

    def holds_grad(self, g):
        if self.grad_ref is None:
            return g is None
        return g is not None and self.grad_ref() is g


def _address(t):
    return 0 if t.layout != torch.strided else t.data_ptr()


def _signature(p, g):
    data = (p._version, _address(shards.local(p)))
    return (data, None if g is None else (g._version, _address(shards.local(g))))


class PythonWrite:
    """The Python write over `entries` ((name_id, parameter, owner module, attribute, model) each), with its
    own per-parameter state."""

    def __init__(self, core, digester, entries):
        self.core, self.digester = core, digester
        self.entries = [Entry(*e) for e in entries]
        self.first_sight, self.step_counts = {}, {}
        self.eval_forwards, self.ddp_forwards = {}, {}

    def write(self, optimizer):
        # The check that each parameter is still the one its module holds (ModelTracker._all), per write.
        if any(e.owner is not None and e.owner._parameters.get(e.attr) is not e.param for e in self.entries):
            raise AssertionError("a parameter was replaced")
        previous = self.core.set_inside_recorder(True)
        try:
            changed, grad_changed = [], []
            for e in self.entries:
                g = e.param.grad
                sig = _signature(e.param, g)
                new_grad = not e.holds_grad(g)
                if new_grad or sig != e.signature:
                    changed.append((e, sig, g, new_grad))
                    if new_grad or e.signature is None or sig[1] != e.signature[1]:
                        grad_changed.append(e)
            self._refresh_digests(changed)
            written = self.entries
            self.core.record_var_states([e.name_id for e in written], [shards.local(e.param) for e in written],
                                        [e.data_digest for e in written], [e.grad_digest for e in written],
                                        0, 0, 0, self._step_claims(written, optimizer))
            for e in grad_changed:
                if e.grad_ref is not None:
                    e.grad_since_reset = True
        finally:
            self.core.set_inside_recorder(previous)

    def _refresh_digests(self, changed):
        tensors, slots = [], []
        for e, sig, g, new_grad in changed:
            old = e.signature or (None, None)
            e.signature = sig
            if sig[0] != old[0]:
                tensors.append(shards.local(e.param))
                slots.append((e, "data_digest"))
            if g is None:
                e.grad_digest = e.grad_ref = None
            elif new_grad or sig[1] != old[1]:
                tensors.append(shards.local(g))
                slots.append((e, "grad_digest"))
                e.grad_ref = weakref.ref(g)
        if tensors:
            for (e, attr), value in zip(slots, self.digester.digests(tensors)):
                setattr(e, attr, value)

    def _step_claims(self, written, optimizer):
        params = [p for group in getattr(optimizer, "param_groups", ()) for p in group.get("params", ())]
        held = {id(p) for p in params}
        has_gradients = any(p.grad is not None for p in params)
        key = id(optimizer)
        first_sight = self.first_sight.setdefault(key, {})
        judged = self.step_counts.get(key, 0) >= _GRACE_STEPS and has_gradients
        claims = {name: [] for name in ("grad_reset", "model_training", "optimizer_has_gradients", "grad_reset_once",
                                        "grad_clipped", "gets_gradients", "eval_in_validation", "forward_through_ddp",
                                        "sampler_epoch_advanced")}
        lists = list(claims.values())
        (resets, training, gradients, once, clipped, gets, evaluating, through_ddp, epochs) = lists
        models = set()
        for e in written:
            if id(e.param) not in held:
                for claim_list in lists:
                    claim_list.append(None)
                continue
            reset, reset_once, was_clipped = e.claims_at_step(key)
            resets.append(reset)
            once.append(reset_once)
            training.append(None if e.grad_ref is None or e.model is None else e.model.training)
            gradients.append(has_gradients)
            clipped.append(was_clipped)
            if e.grad_ref is not None:
                e.grad_steps.add(key)
            built_to_train = first_sight.setdefault(id(e.param), e.param.requires_grad)
            if built_to_train:
                e.trained_by.add(key)
            trainable = judged and built_to_train and e.param.requires_grad
            gets.append(True if trainable and key in e.grad_steps else False if trainable else None)
            model = None if e.model is None else id(e.model)
            models.add(model)
            evaluating.append(self.eval_forwards.get(model))
            through_ddp.append(self.ddp_forwards.get(model))
            epochs.append(None)
        for model in models:
            self.eval_forwards.pop(model, None)
            self.ddp_forwards.pop(model, None)
        return claims
