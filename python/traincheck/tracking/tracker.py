"""Tracks the parameters of named models and writes their states through the recorder.

Styles (`--model-tracker-style`) share this implementation, the records differing only where the
original's differ: `sampler` writes no `mode`/`dump_loc`; `proxy` and `subclass` write
mode="update", dump_loc="initing" at the start and mode="sample" after optimizer steps.

When states are written:
- once when a model is tracked, for every parameter;
- after every optimizer step, for every parameter (torch's global optimizer step post-hook), or, in a
  loop that updates parameters by hand (no optimizer), at the end of each iteration;
- at the end of each iteration after an optimizer step, for the parameters that changed since (a
  `zero_grad` after the step, as library Trainer loops do it): the last state of a step is what
  ConsistencyRelation compares, and selective mode wraps no zero_grad that would write it;
- before and after each call of an API that mutates parameters (optimizer steps, zero_grad; full mode)
  or that an invariant over variables names (selective mode), for the parameters that changed since they
  were last written (mode "selective-sample"): what the call changes is written inside its window (after
  its pre-record, before its post-record), so inference can tie a change to the API that made it.

At an optimizer's step, each parameter it holds that has a gradient, and had one at that optimizer's
previous step, also gets whether its gradient was reset in between (`_TRAINCHECK_grad_reset`, what
GradientResetRelation checks): reset when the gradient is another tensor than at that step (set to None,
then made anew by backward), or when a recorded `zero_grad` call changed it (zeroed in place,
`set_to_none=False`, or set to None and given back the same tensor, as DDP's bucket views are). Without
a reset, backward accumulated into the last step's gradient: a missing `zero_grad`.

With it, for those parameters that have a gradient, whether the model they were tracked under is in
training mode (`_TRAINCHECK_model_training`, what TrainingModeRelation checks): a model left in eval mode
after validation is trained in eval mode. And, for every parameter it holds, whether any parameter it
holds, tracked or not, has a gradient (`_TRAINCHECK_optimizer_has_gradients`, what
OptimizerHasGradientsRelation checks): an optimizer built over the frozen parameters steps on nothing.
With the reset claim, whether at most one reset threw away a computed gradient since that step
(`_TRAINCHECK_grad_reset_once`, what GradientResetOnceRelation checks): a write that sees the gradient
change outside a zero_grad or clipping call marks it computed, and a recorded zero_grad that changes a
computed gradient throws it away; a zero_grad inside the micro-batch loop throws one away per micro-batch.
And, for a parameter whose gradient a recorded clipping call (clip_grad_norm_, clip_grad_value_) changed
since that optimizer's previous step, whether the gradient stepped on is the one the last clipping left
(`_TRAINCHECK_grad_clipped`, what GradientClippedRelation checks): clipping after the step clips a
gradient no step uses; a step with no clipping before it (an extra step for another objective) makes no
claim.

Each claim is declared once, in C++ (cpp/record/step_claims.h; `_core.step_claims()` lists them): the
tracker passes its per-parameter lists to `record_var_states` keyed by those names, and the recorder
rejects a name it does not declare.

Cheap signals decide what changed (version counter, storage pointer, grad identity and version); a
digest is computed only for a tensor whose signal moved (data and grad apart), so unchanged parameters
cost no tensor work.

A submodule set after tracking began (`model.head = nn.Linear(...)` for fine-tuning) is followed: torch's
global module registration hook marks the models to be walked again at the next write. A parameter
replaced in its module after tracking began (FSDP2's fully_shard registers sharded
parameters in place of the originals) is followed: each write first checks, with one dict lookup per
parameter, that every tracked parameter is still the one its module holds, and tracks the module again if
not. Sharded (DTensor) parameters are digested on this rank's shard, and named after it (shards.py).
"""

from __future__ import annotations

import weakref

import torch

from traincheck.meta_vars import get_meta_vars
from traincheck.tracking import discovery, shards
from traincheck.tracking.deferred_states import DeferredStates
from traincheck.tracking.digest import Digester

PARAMETER_TYPE = "torch.nn.Parameter"


class _Entry:
    __slots__ = ("name_id", "param", "owner", "attr", "model", "signature", "data_digest", "grad_digest", "grad_ref",
                 "resets", "discards", "grad_since_reset", "clips", "clip_ref", "clip_version", "steps")

    def __init__(self, name_id: int, param: torch.Tensor, owner=None, attr=None, model=None):
        self.name_id = name_id
        self.param = param
        self.owner = owner  # the module whose _parameters[attr] is `param` (None: a tensor tracked itself)
        self.attr = attr
        self.model = model  # the model it was tracked under (_model_of; None: a tensor tracked itself)
        self.signature = None  # (data signal, grad signal) when last written
        self.data_digest = None
        self.grad_digest = None
        # The gradient tensor last digested, weakly: a new gradient (zero_grad(set_to_none=True), then
        # backward) can get the freed one's id, data address and version, so only the object itself tells
        # them apart; a weak reference neither keeps the old gradient's memory nor lets its id be reused
        # while it is alive.
        self.grad_ref = None
        self.resets = 0  # recorded zero_grad calls that changed the gradient
        # Of those, the ones that threw away a gradient computed since the previous reset (`grad_since_reset`:
        # a write saw the gradient change outside a zero_grad or clipping call).
        self.discards = 0
        self.grad_since_reset = False
        # Recorded clipping calls (clip_grad_norm_, clip_grad_value_) that changed the gradient, and the
        # gradient as the last one left it: its tensor, weakly, and its version.
        self.clips = 0
        self.clip_ref = None
        self.clip_version = 0
        # Per optimizer holding the parameter (its id): (grad_ref, resets, discards, clips) at its last step,
        # grad_ref None when the parameter had no gradient then.
        self.steps = {}

    def claims_at_step(self, optimizer_key: int) -> tuple[bool | None, bool | None, bool | None]:
        """At a step of the optimizer `optimizer_key`, once `grad_ref` is the gradient now: whether the
        gradient was reset since that optimizer's previous step, and whether at most one reset threw away
        a computed gradient in between (None: no claim, it had no gradient at one of the two); and, when
        it was clipped since that step (or, at the optimizer's first step, ever), whether the gradient
        now is the one the last clipping left, unchanged since (None: not clipped since, or no gradient).
        A weak reference is one object per live tensor (weakref.ref returns the existing one), so
        comparing references compares tensors, and no reference is made here: this runs per parameter
        and optimizer step."""
        ref = self.grad_ref
        last = self.steps.get(optimizer_key)
        self.steps[optimizer_key] = (ref, self.resets, self.discards, self.clips)
        clipped = None
        if ref is not None and self.clips > (0 if last is None else last[3]):
            g = ref()
            clipped = ref is self.clip_ref and g is not None and g._version == self.clip_version
        if ref is None or last is None or last[0] is None:
            return None, None, clipped
        return ref is not last[0] or last[1] != self.resets, self.discards - last[2] <= 1, clipped

    def holds_grad(self, g) -> bool:
        """Whether `g` (the parameter's gradient now) is the tensor last digested (both None included)."""
        if self.grad_ref is None:
            return g is None
        return g is not None and self.grad_ref() is g  # a dead reference is no tensor, not None's twin


CLIPPING_APIS = ("clip_grad_norm_", "clip_grads_with_norm_", "clip_grad_value_")


def clips_gradients(api_name: str) -> bool:
    """torch's gradient clipping (torch.nn.utils.clip_grad; clip_grad_norm_ clips through
    _clip_grads_with_norm_) and an FSDP module's clip_grad_norm_."""
    return api_name.startswith("torch.") and api_name.endswith(CLIPPING_APIS)


def mutates_parameters(api_name: str) -> bool:
    """APIs whose calls change parameters or their gradients: an optimizer's `step` (not an LR
    scheduler's), `zero_grad` of optimizers and modules, gradient clipping. Full mode tracks variables
    around them (the recorder's variable hook)."""
    if api_name.endswith(".zero_grad"):
        return api_name.startswith(("torch.optim.", "torch.nn.modules.module.Module."))
    if clips_gradients(api_name):
        return True
    return (api_name.startswith("torch.optim.") and api_name.endswith(".step")
            and not api_name.startswith("torch.optim.lr_scheduler."))


def _data_address(t: torch.Tensor) -> int:
    """The tensor's data address; 0 for one without storage (a sparse gradient, from nn.Embedding(sparse=True):
    data_ptr raises there, and the user's training must run as without the tool)."""
    if t.layout != torch.strided:
        return 0
    return t.data_ptr()


def _signature(p: torch.Tensor, g: torch.Tensor | None) -> tuple:
    """What changes when `p` or its gradient `g` is written in place. Which gradient tensor it is, the
    entry tells (_Entry.holds_grad): an id can come back for a new tensor."""
    # A DTensor's in-place updates bump its own version counter, not its local shard's: versions are read
    # on the tensor itself, storage pointers on the shard.
    data = (p._version, _data_address(shards.local(p)))
    return (data, None if g is None else (g._version, _data_address(shards.local(g))))


def _forget_fused_writes(entries: list[_Entry], optimizer) -> None:
    """A fused optimizer (`fused=True`; transformers' Trainer defaults to `adamw_torch_fused`) updates its
    parameters in one kernel that leaves their version counters as they were: the signature cannot see the
    write, so the data of the parameters its fused groups hold is digested again."""
    fused = {id(p) for group in getattr(optimizer, "param_groups", ()) if group.get("fused")
             for p in group.get("params", ())}
    if not fused:
        return
    for e in entries:
        if e.signature is not None and id(e.param) in fused:
            e.signature = (None, e.signature[1])


def _model_of(obj):
    """The module whose parameters tracking `obj` follows: the module itself, the module inside a DDP
    wrapper (same parameters, same names as before the wrap), or the model an object holds in `.model`
    (transformers' Trainer); None for anything else."""
    if not isinstance(obj, torch.nn.Module) and isinstance(getattr(obj, "model", None), torch.nn.Module):
        obj = obj.model
    if not isinstance(obj, torch.nn.Module):
        return None
    inner = getattr(obj, "module", None)
    if isinstance(obj, torch.nn.parallel.DistributedDataParallel) and isinstance(inner, torch.nn.Module):
        obj = inner
    return obj


def _parameters(obj, name: str):
    """(dotted name, tensor, owner module, attribute) of each parameter of a module (_model_of), in
    named_parameters' order and names; or of a tensor."""
    if isinstance(obj, torch.Tensor):
        return [(name + shards.shard_suffix(obj), obj, None, None)]
    obj = _model_of(obj)
    if obj is None:
        return []
    out, seen = [], set()
    for module_name, module in obj.named_modules():
        for attr, p in module._parameters.items():
            if p is None or id(p) in seen:
                continue
            seen.add(id(p))
            dotted = f"{module_name}.{attr}" if module_name else attr
            out.append((f"{name}.{dotted}{shards.shard_suffix(p)}", p, module, attr))
    return out


def _computed(grad_changed: list[_Entry]) -> None:
    """Gradients a write saw changed outside a zero_grad or clipping call: computed (backward) since."""
    for e in grad_changed:
        if e.grad_ref is not None:
            e.grad_since_reset = True


class ModelTracker:
    """`discover`: at each optimizer step, the models holding parameters it steps that no tracked model
    holds are found and tracked under names of their own (tracking/discovery.py), so claims need no
    --models-to-track."""

    def __init__(self, core, style: str = "sampler", tensor_hash: str = "full", discover: bool = False):
        self.core = core
        self.discover = discover
        # Per optimizer, weakly: how many tensors its groups held when its parameters were last all tracked.
        self._discovered = weakref.WeakKeyDictionary()
        self._looked_for_optimizers = False  # the live optimizers looked for at the first step boundary
        self._discovered_names: set[str] = set()  # tracked names discovery chose (named models are never dropped)
        self.style = style
        self.digester = Digester(tensor_hash)
        self._states = DeferredStates(core)  # writes whose device digests are on their way to the host
        self.entries: dict[str, list[_Entry]] = {}  # tracked name -> its parameters
        self.objects: dict[str, object] = {}        # tracked name -> the module or tensor
        self._var_type_id = core.intern(PARAMETER_TYPE)
        self._ids: dict[str, int] = {}
        self._stepped_since_boundary = False
        self._modules_registered = False  # a submodule was set since the last write (module_registered)

    def _id(self, text: str | None) -> int:
        if text is None:
            return 0
        i = self._ids.get(text)
        if i is None:
            i = self._ids[text] = self.core.intern(text)
        return i

    # -- public ---------------------------------------------------------------------------------------
    def track(self, obj, name: str) -> None:
        """Start tracking `obj` (a module or tensor) under `name`; re-tracking a name replaces it."""
        known = {id(e.param): e for e in self.entries.get(name, [])}
        model = None if isinstance(obj, torch.Tensor) else _model_of(obj)
        entries = []
        for pname, p, owner, attr in _parameters(obj, name):
            entries.append(known.get(id(p)) or _Entry(self._id(pname), p, owner, attr, model))
        self.entries[name] = entries
        self.objects[name] = obj
        fresh = [e for e in entries if e.signature is None]
        if self.style == "sampler":
            self._write(fresh, mode=None, dump_loc=None, only_changed=False)
        else:
            self._write(fresh, mode="update", dump_loc="initing", only_changed=False)

    def at_exit(self) -> None:
        """The end of training: the last iteration's states, then every write still waiting for the device."""
        self.at_step_end()
        self._states.drain()

    def module_registered(self, module, name, submodule) -> None:
        """torch's global module registration hook (`module.name = submodule`, add_module): the tracked
        models are walked again at the next write, so a part replaced after tracking began is followed."""
        self._modules_registered = True

    def after_optimizer_step(self, optimizer, args, kwargs) -> None:
        self._stepped_since_boundary = True
        if self.discover:
            self._discover_models_of(optimizer)
        entries = self._all()
        _forget_fused_writes(entries, optimizer)
        mode, loc = (None, None) if self.style == "sampler" else ("sample", type(optimizer).__qualname__ + ".step")
        _computed(self._write(entries, mode=mode, dump_loc=loc, only_changed=False, stepped=optimizer))

    def at_step_end(self) -> None:
        """Iteration boundary (start_step, and exit): the states the step ends with. After an optimizer
        step only what changed since it; without one (parameters updated by hand), every state."""
        self._states.release_ready()
        stepped = self._stepped_since_boundary
        self._stepped_since_boundary = False
        if self.discover and not self._looked_for_optimizers:
            # The first boundary: the optimizers built before the loop are found now, so that their models'
            # states before any update are written (ranks that start apart differ at the first step).
            self._looked_for_optimizers = True
            if not discovery.dynamo_is_tracing():
                for optimizer in discovery.live_optimizers():
                    self._discover_models_of(optimizer)
        if not stepped and get_meta_vars().get("step", 0) == 0:
            return  # the first boundary: the states were written when the models were tracked
        mode, loc = (None, None) if self.style == "sampler" else ("sample", "step_end")
        _computed(self._write(self._all(), mode=mode, dump_loc=loc, only_changed=stepped))

    def around_api(self, api_name: str, phase: str) -> None:
        """The recorder's variable hook, before and after calls of the APIs it wraps: write what changed.
        Sampler records carry no mode/dump_loc, as the original's never do."""
        mode, loc = (None, None) if self.style == "sampler" else ("selective-sample", api_name)
        grad_changed = self._write(self._all(), mode=mode, dump_loc=loc, only_changed=True)
        if phase == "post" and api_name.endswith(".zero_grad"):
            for e in grad_changed:
                e.resets += 1
                e.discards += e.grad_since_reset
                e.grad_since_reset = False
        elif phase == "post" and clips_gradients(api_name):
            for e in grad_changed:
                if e.grad_ref is not None:
                    e.clips += 1
                    e.clip_ref, e.clip_version = e.grad_ref, e.grad_ref()._version
        else:
            _computed(grad_changed)

    # -- internals ------------------------------------------------------------------------------------
    def _discover_models_of(self, optimizer) -> None:
        """Track what holds the optimizer's untracked parameters. Per step
        this costs a count of its groups' tensors; the walk runs only when the count changed (its first
        step, a group added). Not while dynamo traces a compiled step's hooks (a walk over every live
        object is nothing a graph can hold): the next step run eagerly does it."""
        groups = getattr(optimizer, "param_groups", ())
        count = sum(len(group.get("params", ())) for group in groups)
        try:
            if self._discovered.get(optimizer) == count:
                return
        except TypeError:  # an optimizer-like object without weak references: walked at each step
            pass
        if discovery.dynamo_is_tracing():
            return
        # The tracked models as they are now (a parameter replaced in one, FSDP2's fully_shard, is followed).
        tracked = {id(e.param) for e in self._all()}
        missing = [p for p in discovery.optimizer_parameters(optimizer) if id(p) not in tracked]
        if missing:
            self._forget_models_no_optimizer_holds(optimizer)
        for name, obj in discovery.owners_of(missing, set(self.entries)) if missing else ():
            self.track(obj, name)
            self._discovered_names.add(name)
        try:
            self._discovered[optimizer] = count
        except TypeError:
            pass

    def _forget_models_no_optimizer_holds(self, stepping) -> None:
        """Stop tracking the discovered models none of whose parameters a live optimizer holds (`stepping`,
        the optimizer stepping now, is live): a k-fold run or a sweep builds a model and its optimizer per
        round, and holding the finished rounds' models would keep their memory for the rest of the run."""
        held = {id(p) for o in [stepping, *discovery.live_optimizers()] for p in discovery.optimizer_parameters(o)}
        for name in sorted(self._discovered_names):
            if not any(id(e.param) in held for e in self.entries.get(name, ())):
                self.entries.pop(name, None)
                self.objects.pop(name, None)
                self._discovered_names.discard(name)

    def _all(self) -> list[_Entry]:
        if self._modules_registered:
            # A submodule was set somewhere since the last write (torch's global hook): it may be a tracked
            # model's new part (a head put on for fine-tuning), whose parameters the entries lack.
            self._modules_registered = False
            for name, obj in list(self.objects.items()):
                self.track(obj, name)
        for name, entries in list(self.entries.items()):
            if any(e.owner is not None and e.owner._parameters.get(e.attr) is not e.param for e in entries):
                self.track(self.objects[name], name)  # a parameter was replaced: follow the module
        return [e for entries in self.entries.values() for e in entries]

    def _write(self, entries: list[_Entry], mode, dump_loc, only_changed: bool, stepped=None) -> list[_Entry]:
        """Write the states of `entries` (only those that changed, with `only_changed`); `stepped`: the
        optimizer whose step this is, for the gradient resets of the parameters it holds. Returns the
        entries whose gradient changed since they were last written."""
        if not entries or not self.core.is_recording():
            return []
        previous = self.core.set_inside_recorder(True)  # the digests' torch calls are not traced
        try:
            changed, grad_changed = [], []
            for e in entries:
                g = e.param.grad
                sig = _signature(e.param, g)
                new_grad = not e.holds_grad(g)
                if new_grad or sig != e.signature:
                    changed.append((e, sig, g, new_grad))
                    if new_grad or e.signature is None or sig[1] != e.signature[1]:
                        grad_changed.append(e)
            self._refresh_digests(changed)
            written = [c[0] for c in changed] if only_changed else entries
            if written:
                self._states.record_var_states(
                    [e.name_id for e in written],
                    [shards.local(e.param) for e in written],
                    [e.data_digest for e in written],
                    [e.grad_digest for e in written],
                    self._var_type_id,
                    self._id(mode),
                    self._id(dump_loc),
                    None if stepped is None else self._step_claims(written, stepped),
                )
            return grad_changed
        finally:
            self.core.set_inside_recorder(previous)

    @staticmethod
    def _step_claims(written: list[_Entry], optimizer) -> dict[str, list]:
        """The claims at `optimizer`'s step, a list per claim keyed by the name `_core.step_claims()`
        declares it under (every declared claim, no other), per written entry (digests refreshed), for the
        parameters it holds (None for the others, and where there is no claim): whether its gradient was reset since
        that optimizer's previous step, and at most once (_Entry.claims_at_step); when it has a gradient,
        whether the model it was tracked under is in training mode; whether any parameter the optimizer
        holds, tracked or not, has a gradient (a step with nothing to apply); and, once its gradient was
        clipped since that step, whether the gradient stepped on is the clipped one."""
        params = [p for group in getattr(optimizer, "param_groups", ()) for p in group.get("params", ())]
        held = {id(p) for p in params}
        has_gradients = any(p.grad is not None for p in params)
        key = id(optimizer)
        resets, once, training, gradients, clipped = [], [], [], [], []
        for e in written:
            if id(e.param) not in held:
                for claims in (resets, once, training, gradients, clipped):
                    claims.append(None)
                continue
            reset, reset_once, was_clipped = e.claims_at_step(key)
            resets.append(reset)
            once.append(reset_once)
            training.append(None if e.grad_ref is None or e.model is None else e.model.training)
            gradients.append(has_gradients)
            clipped.append(was_clipped)
        return {"grad_reset": resets, "model_training": training, "optimizer_has_gradients": gradients,
                "grad_reset_once": once, "grad_clipped": clipped}

    def _refresh_digests(self, changed: list) -> None:
        tensors, slots = [], []
        for e, sig, g, new_grad in changed:
            old = e.signature or (None, None)
            e.signature = sig
            if sig[0] != old[0]:
                tensors.append(shards.local(e.param))
                slots.append((e, "data_digest"))
            if g is None:
                e.grad_digest = None
                e.grad_ref = None
            elif new_grad or sig[1] != old[1]:
                tensors.append(shards.local(g))
                slots.append((e, "grad_digest"))
                e.grad_ref = weakref.ref(g)
        self._states.assign(slots, self.digester.digests_later(tensors))
