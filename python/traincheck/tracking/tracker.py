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

In a loop that updates parameters by hand (no optimizer steps: `p -= lr * p.grad` under no_grad), each
iteration boundary at which a parameter's data changed is an update, and the parameter gets the
`_TRAINCHECK_grad_reset` claim there (_Entry.reset_by_hand): a reset by `p.grad = None` or `zero_grad()` is
seen as at an optimizer's step, and one by `p.grad.zero_()`, an in-place write no wrapper sees, as more
writes to the gradient than backward's accumulations into it (counted by a post-accumulate hook on each
such parameter). Without an optimizer nothing is discovered at steps: at the first iteration boundaries,
the models with gradients, or whose parameters changed since the previous boundary, are tracked.

Four claims come from what the tracker sees between two steps of an optimizer:
- `_TRAINCHECK_gets_gradients` (ParameterGetsGradientsRelation), for a parameter an optimizer holds that
  required gradients when the optimizer was built (`watch_optimizer_construction`; a parameter group added
  later: when first seen at a step): from the optimizer's fifth step (_GRACE_STEPS), at a step with some gradient to
  apply, while the parameter requires gradients, whether it has had a gradient at one of that optimizer's
  steps (a detached activation leaves the parameters before it without one); and at the end of the run
  (`at_exit`), whether it had one at any step (a layer frozen after its optimizer was built, and never
  unfrozen, had none; frozen for a warm-up and unfrozen later, it had).
- `_TRAINCHECK_eval_in_validation` (EvalModeInValidationRelation): for the parameters of a tracked model
  holding a layer that depends on its mode (_depends_on_mode) that ran forward passes without gradients in
  an evaluation loop (meta_vars.in_evaluation) since the previous step, whether all of them ran in eval
  mode. A forward pre-hook on each tracked model sees them. A functional dropout called in the forward of
  a model in eval mode without its `training` flag (`F.dropout(x, p)`, whose default is True) drops units
  while the model evaluates: that model's verdict is false (`watch_functional_dropout`). Validation after
  the optimizers' last step is claimed at the end of the run.
- `_TRAINCHECK_forward_through_ddp` (ForwardThroughWrapperRelation): for the parameters of a tracked
  model a DistributedDataParallel wraps that ran forward passes with gradients in training mode since the
  previous step, whether all of them ran inside the wrapper's forward (`model.module(x)` skips the
  gradient averaging). The same hook sees them.
- `_TRAINCHECK_sampler_epoch_advanced` (SamplerEpochAdvancesRelation): for every parameter the optimizer
  holds, at the first step after a shuffling DistributedSampler began a pass, when an earlier pass of it
  was trained on: whether the epochs differ (`set_epoch`); a pass no step follows is never compared.
  `watch_sampler_iterations` sees the iterations.
- `_TRAINCHECK_optimizer_stepped` (OptimizerStepsRelation), at the end of the run only: for the parameters
  an optimizer was built to train, whether it stepped; made for an optimizer that never stepped only when
  one of them has a gradient then (gradients computed and never applied: a missing `optimizer.step()`).
A hook costs one Python call per forward of a tracked model (not per layer), and nothing while dynamo
traces a compiled forward.

Each claim is declared once, in C++ (cpp/record/step_claims.h; `_core.step_claims()` lists them): the
tracker passes its per-parameter lists to `record_var_states` keyed by those names, and the recorder
rejects a name it does not declare.

Cheap signals decide what changed (version counter, storage pointer, grad identity and version); a
digest is computed only for a tensor whose signal moved (data and grad apart), so unchanged parameters
cost no tensor work. That per-parameter work, the claims at a step and the gradient bookkeeping run in C++
(`_core.TrackedParams`, one call per write; docs/collection.md §Model tracking): Python keeps the entries,
the digests' torch calls, the hooks, and the judgement of updates by hand.

A submodule set after tracking began (`model.head = nn.Linear(...)` for fine-tuning) is followed: torch's
global module registration hook marks the models to be walked again at the next write. A parameter
replaced in its module after tracking began (FSDP2's fully_shard registers sharded
parameters in place of the originals) is followed: each write first checks, with one dict lookup per
parameter, that every tracked parameter is still the one its module holds, and tracks the module again if
not. Sharded (DTensor) parameters are digested on this rank's shard, and named after it (shards.py).
"""

from __future__ import annotations

import functools
import sys
import weakref

import torch

from traincheck import _core, meta_vars
from traincheck.meta_vars import get_meta_vars
from traincheck.tracking import discovery, shards, torch_fields
from traincheck.tracking.deferred_states import DeferredStates
from traincheck.tracking.digest import Digester

PARAMETER_TYPE = "torch.nn.Parameter"


class _Entry:
    """A tracked parameter as Python sees it: its name, the module and model it was tracked under, and its
    slot in the tracker's TrackedParams (traincheck._core), which holds its signature, digests and gradient
    bookkeeping; here only the state of updates by hand (no optimizer), which needs Python hooks."""

    __slots__ = ("name_id", "param", "owner", "attr", "model", "slot", "data_version", "data_digest", "accumulations",
                 "accumulation_hook", "hand", "__weakref__")

    def __init__(self, params, name_id: int, param: torch.Tensor, owner=None, attr=None, model=None):
        self.name_id = name_id
        self.param = param
        self.owner = owner  # the module whose _parameters[attr] is `param` (None: a tensor tracked itself)
        self.attr = attr
        self.model = model  # the model it was tracked under (_model_of; None: a tensor tracked itself)
        # The slot keeps owner and model borrowed: this entry keeps them alive while it is tracked.
        self.slot = params.add(param, owner, attr, model, name_id, shards.is_dtensor(param))
        # Updates by hand (no optimizer): the data's version at the last iteration boundary; backward's
        # accumulations into the gradient (counted by a hook, once the parameter was first updated by
        # hand); and (gradient, its version, accumulations, resets) at its last update (None: no gradient).
        self.data_version = param._version
        self.data_digest = None  # the data's digest at the last iteration boundary, when known on the host
        self.accumulations = 0
        self.accumulation_hook = None
        self.hand = None

    def reset_by_hand(self, resets: int, clips: int, data_digest) -> bool | None:
        """At an iteration boundary with no optimizer step: when the data changed since the last boundary (an
        update by hand: its version moved, or, for an update through `p.data`, which has a version counter of
        its own, its digest `data_digest` did), whether the gradient was reset since the previous update;
        None when it was not updated, had no gradient at one of the two updates, or its accumulations were
        not counted yet. A digest still on its way from a device is not compared: there, only an update
        that moves the version is seen. Reset: another gradient tensor (set to None, made anew by backward),
        a recorded zero_grad that changed it (`resets`: their count so far, TrackedParams.resets), or more
        in-place writes to it than backward's accumulations and the recorded clipping calls that changed it
        (`clips`, TrackedParams.clips) made (`p.grad.zero_()`). Without a reset, backward accumulated into
        the previous update's gradient: a missing zero_grad."""
        version = self.param._version
        updated, self.data_version = version != self.data_version, version
        if type(data_digest) is int:
            updated |= self.data_digest is not None and data_digest != self.data_digest
            self.data_digest = data_digest
        if not updated:
            return None
        g = self.param.grad
        last, counted = self.hand, self.accumulation_hook is not None
        self.hand = None if g is None else (weakref.ref(g), g._version, self.accumulations, resets, clips)
        self.count_accumulations()
        if g is None or last is None or not counted:
            return None
        if last[0]() is not g or last[3] != resets:
            return True
        # In-place writes to the gradient: backward's accumulations, one per recorded clipping call, and a reset.
        return g._version - last[1] > (self.accumulations - last[2]) + (clips - last[4])

    def count_accumulations(self) -> None:
        """Count backward's accumulations into the gradient from now on (a hook after each one)."""
        if self.accumulation_hook is None and self.param.requires_grad:
            def accumulated(_param, entry=weakref.ref(self)):
                e = entry()
                if e is not None:
                    e.accumulations += 1
            self.accumulation_hook = self.param.register_post_accumulate_grad_hook(accumulated)


# Iteration boundaries at which, with no optimizer stepped and nothing tracked, the tracker looks for models
# with gradients (a loop updating parameters by hand): a walk over the live objects each, so a few only.
_HAND_SEARCHES = 3


# The gets_gradients claim is made from an optimizer's step this many on: a layer only some batches use
# (a branch, an expert, a layer dropped now and then) has had a gradient by then, almost always; one never
# given any is judged at the end of the run in any case.
_GRACE_STEPS = 5


# What the gradients a write saw change mean (TrackedParams.after_write): nothing (tracking, the end of the
# run); computed by backward (a change outside zero_grad or clipping); reset by a recorded zero_grad;
# clipped by a recorded clipping call.
_NO_EFFECT, _COMPUTED, _RESET, _CLIPPED = 0, 1, 2, 3


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


def _forget_fused_writes(params, optimizer) -> None:
    """A fused optimizer (`fused=True`; transformers' Trainer defaults to `adamw_torch_fused`) updates its
    parameters in one kernel that leaves their version counters as they were: the signature cannot see the
    write, so the data of the parameters its fused groups hold is digested again."""
    fused = [group.get("params", ()) for group in getattr(optimizer, "param_groups", ()) if group.get("fused")]
    if fused:
        params.forget_data(fused)


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


def _is_ddp(obj) -> bool:
    return isinstance(obj, torch.nn.parallel.DistributedDataParallel)


def _wrapped_by_ddp(outer, model) -> bool:
    """Whether a DistributedDataParallel is among the wrappers from `outer` down to `model` (DDP itself,
    or a torch.compile'd DDP)."""
    for _ in range(4):
        if outer is None or outer is model or not isinstance(outer, torch.nn.Module):
            return False
        if _is_ddp(outer):
            return True
        outer = outer._modules.get("_orig_mod") or outer._modules.get("module")
    return False


class _ForwardWatch:
    """A tracked model's forward pre-hook (ModelTracker._forward_seen). The model's hooks travel with it: a
    `copy.deepcopy` of the model (an EMA or best-model copy) shares this object, and the copy's forwards are
    ignored (it is not tracked); a pickled model (`torch.save(model)`) gets in its place `{}.get`, which
    returns the forward's arguments unchanged, so loading it needs no traincheck."""

    __slots__ = ("tracker",)

    def __init__(self, tracker):
        self.tracker = tracker

    def __call__(self, module, args):
        self.tracker._forward_seen(module, args)

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        return getattr, ({}, "get")


def _depends_on_mode(model: torch.nn.Module) -> bool:
    """Whether `model` computes otherwise in training mode: it holds a dropout layer with p > 0 or a
    normalisation layer keeping running statistics (which a forward in training mode also updates). A model
    without one validates alike in either mode: its mode is no claim."""
    for m in model.modules():
        if isinstance(m, torch.nn.modules.dropout._DropoutNd) and m.p > 0:
            return True
        if isinstance(m, torch.nn.modules.batchnorm._NormBase) and m.track_running_stats:
            return True
    return False


_NO_PASS = object()  # a sampler with no pass trained on yet
_FRAMES_TO_A_MODEL = 32  # frames walked from a functional dropout to the tracked model whose forward runs it


def _and(verdict: bool | None, ok: bool) -> bool:
    """A verdict over several observations: every one of them held."""
    return ok if verdict is None else verdict and ok


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


class _OptimizerSeen:
    """An optimizer as the tracker first saw it: which of its parameters (ids) required gradients then
    (`first_sight`), those parameters themselves, weakly (`trainable`: what it was built to train), and how
    many steps it took since. It holds no reference to the optimizer, so it outlives it (a training
    function's local) for the end of the run's claims."""

    __slots__ = ("first_sight", "trainable", "steps")

    def __init__(self, params: list):
        self.first_sight = {id(p): p.requires_grad for p in params}
        self.trainable = [weakref.ref(p) for p in params if p.requires_grad]
        self.steps = 0


def watch_optimizer_construction(tracker: "ModelTracker") -> None:
    """Tell `tracker` what each optimizer trains as it is built: `Optimizer.__init__` is replaced by a
    function that calls the original, then the tracker (ModelTracker.optimizer_built). Once per optimizer."""
    original = torch.optim.Optimizer.__init__

    @functools.wraps(original)
    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        tracker.optimizer_built(self)

    torch.optim.Optimizer.__init__ = __init__


def watch_gradient_unscaling(tracker: "ModelTracker") -> None:
    """Tell `tracker` when a GradScaler unscales an optimizer's gradients (`unscale_`, or `step` before
    it steps): its kernel writes them in place without moving their version counters, so the signatures
    cannot see it (ModelTracker.gradients_unscaled). A torch without `torch.amp.grad_scaler` is left alone."""
    try:
        from torch.amp.grad_scaler import GradScaler
    except ImportError:
        return
    original = getattr(GradScaler, "_unscale_grads_", None)
    if original is None:
        return

    @functools.wraps(original)
    def _unscale_grads_(self, optimizer, *args, **kwargs):
        result = original(self, optimizer, *args, **kwargs)
        tracker.gradients_unscaled(optimizer)
        return result

    GradScaler._unscale_grads_ = _unscale_grads_


def watch_sampler_iterations(tracker: "ModelTracker") -> None:
    """Tell `tracker` when a DistributedSampler (or a subclass calling its `__iter__`) begins an iteration:
    `DistributedSampler.__iter__` is replaced by a function that calls the tracker, then the original. Once
    per pass over the data, never per batch."""
    from torch.utils.data.distributed import DistributedSampler

    original = DistributedSampler.__iter__

    @functools.wraps(original)
    def __iter__(self):
        tracker.sampler_iterated(self)
        return original(self)

    DistributedSampler.__iter__ = __iter__


_DROPOUTS = ("dropout", "alpha_dropout", "feature_alpha_dropout", "dropout1d", "dropout2d", "dropout3d")


def watch_functional_dropout(tracker: "ModelTracker") -> None:
    """Tell `tracker` when a functional dropout runs with its `training` argument left to its default (True),
    which drops units in a model's eval mode too (`F.dropout(x, p)` in a forward, where
    `training=self.training` was meant): each function of torch.nn.functional in _DROPOUTS is replaced by one
    that calls the original with the arguments given, and, only for a default `training` and p > 0, the
    tracker (ModelTracker.dropout_defaulted). Modules' dropouts (nn.Dropout) pass their mode and cost one
    Python call more. torch.jit.script is off under the collector (launcher.py), as for every wrapper."""
    import torch.nn.functional as F

    def watch(original):
        @functools.wraps(original)
        def watched(*args, **kwargs):
            # The original gets the call as made (a recorder wrapping it records the arguments given).
            if len(args) < 3 and "training" not in kwargs:
                p = args[1] if len(args) > 1 else kwargs.get("p", 0.5)
                if type(p) in (float, int) and p > 0:  # a tensor p is never compared (a device read)
                    tracker.dropout_defaulted()
            return original(*args, **kwargs)

        return watched

    for name in _DROPOUTS:
        original = getattr(F, name, None)
        if original is not None:
            setattr(F, name, watch(original))


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
        # Every tracked parameter's state and the per-parameter work of a write, in C++ (reading tensors
        # straight from torch's TensorImpl where torch_fields can); the entries in write order, and by slot
        # (_sync keeps the three in step).
        torch_fields.load()
        self.params = _core.TrackedParams(torch.Tensor, torch.nn.Parameter, torch.strided, shards.local)
        self._order: list[_Entry] = []
        self._by_slot: dict[int, _Entry] = {}
        self._slot_names: dict[int, str] = {}
        self._var_type_id = core.intern(PARAMETER_TYPE)
        self._ids: dict[str, int] = {}
        self._stepped_since_boundary = False
        self._modules_registered = False  # a submodule was set since the last write (module_registered)
        # Every optimizer seen, in the order seen (kept once it is gone: _never_stepped), and by optimizer,
        # weakly.
        self._seen: list[_OptimizerSeen] = []
        self._seen_by = weakref.WeakKeyDictionary()
        self._steps_taken = 0  # optimizer steps, all optimizers
        # Per tracked model (id): its forward pre-hook's handle, whether a DDP wraps it, and the verdicts
        # over its forwards since its optimizer's last step (None: no such forward).
        self._forward_hooks: dict[int, object] = {}
        self._ddp_wrapped: set[int] = set()
        self._eval_forwards: dict[int, bool] = {}
        self._ddp_forwards: dict[int, bool] = {}
        # Per DistributedSampler, weakly: the epoch of its pass begun and not yet trained on (no optimizer
        # step since it began), and the epoch of its last pass trained on; the verdict over the passes first
        # trained on since the last step (_judge_sampler_passes).
        self._sampler_pending = weakref.WeakKeyDictionary()
        self._sampler_trained = weakref.WeakKeyDictionary()
        self._sampler_verdict: bool | None = None
        # Per tracked model (id): whether it has a layer whose behaviour depends on its mode (dropout, batch
        # norm's running statistics), found at its first forward in an evaluation loop.
        self._mode_dependent: dict[int, bool] = {}
        self._hand_searches = 0  # walks for models trained by hand (at_step_end)
        self._hand_versions: dict[int, int] = {}  # their parameters' versions at the last walk
        # torch's own functions, never a recorder's wrapper of them: the hooks' calls are not the program's.
        unwrap = getattr(core, "unwrap", lambda f: f)
        self._grad_enabled = unwrap(torch.is_grad_enabled)
        self._is_compiling = unwrap(getattr(getattr(torch, "compiler", None), "is_compiling", lambda: False))

    def _id(self, text: str | None) -> int:
        if text is None:
            return 0
        i = self._ids.get(text)
        if i is None:
            i = self._ids[text] = self.core.intern(text)
        return i

    # -- public ---------------------------------------------------------------------------------------
    def track(self, obj, name: str, wrapper=None) -> None:
        """Start tracking `obj` (a module or tensor) under `name`; re-tracking a name replaces it. `wrapper`:
        the module that wraps `obj` where it was found (discovery's root), when not `obj` itself."""
        known = {id(e.param): e for e in self.entries.get(name, [])}
        model = None if isinstance(obj, torch.Tensor) else _model_of(obj)
        if model is not None:
            self._watch_forwards(model, _wrapped_by_ddp(obj, model) or _wrapped_by_ddp(wrapper, model))
        entries = []
        for pname, p, owner, attr in _parameters(obj, name):
            entries.append(known.get(id(p)) or _Entry(self.params, self._id(pname), p, owner, attr, model))
        self.entries[name] = entries
        self.objects[name] = obj
        self._sync()
        fresh = self.params.unwritten([e.slot for e in entries])
        if self.style == "sampler":
            self._write(fresh, mode=None, dump_loc=None, only_changed=False, effect=_NO_EFFECT)
        else:
            self._write(fresh, mode="update", dump_loc="initing", only_changed=False, effect=_NO_EFFECT)

    def module_registered(self, module, name, submodule) -> None:
        """torch's global module registration hook (`module.name = submodule`, add_module): the tracked
        models are walked again at the next write, so a part replaced after tracking began is followed."""
        self._modules_registered = True

    def after_optimizer_step(self, optimizer, args, kwargs) -> None:
        self._stepped_since_boundary = True
        self._steps_taken += 1
        if self._sampler_pending:
            self._judge_sampler_passes()
        self._note_optimizer(optimizer, stepped=True)
        if self.discover:
            self._discover_models_of(optimizer)
        self._all()
        _forget_fused_writes(self.params, optimizer)
        mode, loc = (None, None) if self.style == "sampler" else ("sample", type(optimizer).__qualname__ + ".step")
        # A step given a closure (LBFGS's is called several times per step) resets and recomputes the gradients
        # inside the step, as the closure decides: whether they were reset between steps is not claimed.
        # torch's step hooks get the step's positional arguments with the optimizer first.
        positional = args[1:] if args and args[0] is optimizer else args
        closure = kwargs.get("closure", positional[0] if positional else None)
        self._write(None, mode=mode, dump_loc=loc, only_changed=False,
                    claims=lambda: self._step_claims(optimizer, resets_claimed=closure is None))

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
        if stepped:
            self._all()
            self._write(None, mode=mode, dump_loc=loc, only_changed=True)
            return
        if self.discover and not self.entries and self._steps_taken == 0 and self._hand_searches < _HAND_SEARCHES:
            # No optimizer has stepped and nothing is tracked: a loop that updates parameters by hand trains
            # the models that have gradients now.
            self._hand_searches += 1
            if not discovery.dynamo_is_tracing():
                for name, obj, root in discovery.models_trained_by_hand(set(self.entries), self._hand_versions):
                    self.track(obj, name, root)
        # Updates by hand are judged in a program no optimizer stepped in (an optimizer's parameters are
        # judged at its steps).
        claims = self._hand_claims if self._steps_taken == 0 else None
        self._all()
        if claims is not None:
            # Updates by hand through `p.data` leave the version counter as it was: the data is digested again.
            self.params.forget_all_data()
        self._write(None, mode=mode, dump_loc=loc, only_changed=False, claims=claims)

    def around_api(self, api_name: str, phase: str) -> None:
        """The recorder's variable hook, before and after calls of the APIs it wraps: write what changed.
        Sampler records carry no mode/dump_loc, as the original's never do."""
        mode, loc = (None, None) if self.style == "sampler" else ("selective-sample", api_name)
        if phase == "post" and api_name.endswith(".zero_grad"):
            effect = _RESET
        elif phase == "post" and clips_gradients(api_name):
            effect = _CLIPPED
        else:
            effect = _COMPUTED
        self._all()
        self._write(None, mode=mode, dump_loc=loc, only_changed=True, effect=effect)

    def gradients_unscaled(self, optimizer) -> None:
        """A GradScaler unscaled `optimizer`'s gradients in place (watch_gradient_unscaling): they are
        digested again at the next write, and a clipping before it no longer left the gradients the step
        applies (clipping scaled gradients: GradientClippedRelation)."""
        self.params.forget_grads([group.get("params", ()) for group in getattr(optimizer, "param_groups", ())])

    def optimizer_built(self, optimizer) -> None:
        """An optimizer was built (watch_optimizer_construction): which of its parameters require gradients
        now is what it was built to train."""
        self._note_optimizer(optimizer)

    def at_exit(self) -> None:
        """The end of the run: the last iteration's states, then, for each optimizer that stepped, the
        gets_gradients claim over the whole run of the parameters it was built to train (a layer frozen after
        its optimizer was built and never unfrozen had no gradient at any step) with the optimizer_stepped
        claim; for each that never stepped while those parameters have gradients, optimizer_stepped false;
        the verdicts over evaluation forwards no step took (a final evaluation); then every write still
        waiting for the device."""
        self.at_step_end()
        # Per optimizer (its id; it may be gone by now), the parameters it was built to train, of the models
        # still tracked (a model the tracker stopped following, _forget_models_no_optimizer_holds, is not
        # judged).
        self._all()
        trained: dict[int, list[int]] = self.params.trained_by()
        if trained and not self.core.is_recording():
            self.core.set_recording(True)  # a sampled-out end still gets the run's verdicts; nothing runs after
        mode, loc = (None, None) if self.style == "sampler" else ("sample", "exit")
        for key, judged in trained.items():
            self._write(judged, mode=mode, dump_loc=loc, only_changed=False,
                        claims=lambda key=key: {**self.params.final_claims(key), **self._stepped_claims(True)},
                        effect=_NO_EFFECT)
        # Optimizers built and never stepped while parameters they were built to train have gradients: the
        # program computed gradients it never applied (a missing optimizer.step()).
        never_stepped = self._never_stepped()
        if never_stepped and not self.core.is_recording():
            self.core.set_recording(True)
        for judged in never_stepped:
            self._write(judged, mode=mode, dump_loc=loc, only_changed=False,
                        claims=lambda: self._stepped_claims(False), effect=_NO_EFFECT)
        # Validation after the last step (a final evaluation): its verdicts no step took.
        if any(v is not None for v in self._eval_forwards.values()):
            if not self.core.is_recording():
                self.core.set_recording(True)
            self._write(None, mode=mode, dump_loc=loc, only_changed=False, claims=self._pending_eval_claims,
                        effect=_NO_EFFECT)
        self._states.drain()

    def _pending_eval_claims(self) -> dict[str, list] | None:
        """The eval_in_validation claim of the write being made (the end of the run) for the parameters of
        models whose evaluation forwards no step took a verdict over; the verdicts are taken."""
        verdicts = self.params.take_eval_verdicts(self._eval_forwards)
        self._eval_forwards.clear()  # verdicts of models no longer tracked: nothing left to claim them on
        return {"eval_in_validation": verdicts} if any(v is not None for v in verdicts) else None

    def _stepped_claims(self, stepped: bool) -> dict[str, list]:
        """The optimizer_stepped claim for every parameter of the write being made (at the end of the run)."""
        return {"optimizer_stepped": [stepped] * len(self.params.written_slots())}

    def _never_stepped(self) -> list[list[int]]:
        """Per optimizer seen built that never stepped, while a parameter it was built to train (required
        gradients then) has a gradient now: the tracked slots of the parameters it was built to train."""
        slot_of = {id(e.param): e.slot for e in self._order}
        out = []
        for seen in self._seen:
            if seen.steps:
                continue
            built_to_train = [p for p in (ref() for ref in seen.trainable) if p is not None]
            slots = [slot_of[id(p)] for p in built_to_train if id(p) in slot_of]
            if slots and any(p.grad is not None for p in built_to_train):
                out.append(slots)
        return out

    def sampler_iterated(self, sampler) -> None:
        """A DistributedSampler begins a pass (watch_sampler_iterations): judged at the first optimizer step
        after it (_judge_sampler_passes), if any; a pass no step follows (a peek at a batch, an evaluation
        over the training set) is no epoch of training."""
        if not getattr(sampler, "shuffle", False):
            return
        try:
            self._sampler_pending[sampler] = getattr(sampler, "epoch", None)
        except TypeError:  # a sampler without weak references
            pass

    def _judge_sampler_passes(self) -> None:
        """At an optimizer step: each pass begun since the previous step is trained on; its epoch should
        differ from the one of its sampler's previous pass trained on."""
        for sampler, epoch in list(self._sampler_pending.items()):
            del self._sampler_pending[sampler]
            last = self._sampler_trained.get(sampler, _NO_PASS)
            if last is not _NO_PASS:
                self._sampler_verdict = _and(self._sampler_verdict, epoch != last)
            self._sampler_trained[sampler] = epoch

    # -- internals ------------------------------------------------------------------------------------
    def _note_optimizer(self, optimizer, stepped: bool = False) -> None:
        """What `optimizer` trains as the tracker first sees it (which parameters require gradients), and
        with `stepped`, one more of its steps."""
        try:
            seen = self._seen_by.get(optimizer)
            if seen is None:
                seen = self._seen_by[optimizer] = _OptimizerSeen(discovery.optimizer_parameters(optimizer))
                self._seen.append(seen)
            if stepped:
                seen.steps += 1
        except TypeError:  # an optimizer-like object without weak references: makes no gets_gradients claim
            pass

    def _watch_forwards(self, model, ddp_wrapped: bool) -> None:
        key = id(model)
        if ddp_wrapped:
            self._ddp_wrapped.add(key)
        if key not in self._forward_hooks:
            self._forward_hooks[key] = model.register_forward_pre_hook(_ForwardWatch(self))

    def _unwatch_forwards(self, model) -> None:
        handle = self._forward_hooks.pop(id(model), None)
        if handle is not None:
            handle.remove()
        for table in (self._ddp_wrapped, self._eval_forwards, self._ddp_forwards, self._mode_dependent):
            table.discard(id(model)) if isinstance(table, set) else table.pop(id(model), None)

    def _forward_seen(self, module, args) -> None:
        """A tracked model's forward pre-hook: a forward without gradients in an evaluation loop should run
        in eval mode; one with gradients in training mode, of a model a DDP wraps, inside the wrapper."""
        if self._is_compiling():  # first: dynamo folds it, and traces nothing of the tracker's
            return None
        key = id(module)
        if key not in self._forward_hooks:
            return None  # a copy of a tracked model: its hooks were copied with it
        if self._grad_enabled():
            if module.training and key in self._ddp_wrapped:
                inside = getattr(torch.nn.parallel.DistributedDataParallel, "_active_ddp_module", None) is not None
                self._ddp_forwards[key] = _and(self._ddp_forwards.get(key), inside)
        elif meta_vars.in_evaluation():
            dependent = self._mode_dependent.get(key)
            if dependent is None:
                dependent = self._mode_dependent[key] = _depends_on_mode(module)
            if dependent:
                self._eval_forwards[key] = _and(self._eval_forwards.get(key), not module.training)
        return None

    def dropout_defaulted(self) -> None:
        """A functional dropout ran with its default `training=True` (watch_functional_dropout). Called from the
        forward of a module in eval mode, it drops units while the model evaluates: the verdict over the
        evaluation forwards of the tracked model running it is false. The frames are walked only here; the
        first module met decides (in training mode, the default is what was meant)."""
        if self._is_compiling():
            return
        frame = sys._getframe(2)  # the caller of the watched function
        decided = False
        for _ in range(_FRAMES_TO_A_MODEL):
            if frame is None:
                return
            module = frame.f_locals.get("self")
            if isinstance(module, torch.nn.Module):
                if not decided:
                    if module.training:
                        return
                    decided = True
                if id(module) in self._forward_hooks:
                    self._eval_forwards[id(module)] = False
                    return
            frame = frame.f_back

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
        for name, obj, wrapper in discovery.owners_of(missing, set(self.entries)) if missing else ():
            self.track(obj, name, wrapper)
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
                obj = self.objects.pop(name, None)
                if isinstance(obj, torch.nn.Module) and not any(o is obj for o in self.objects.values()):
                    self._unwatch_forwards(obj)
                self._discovered_names.discard(name)
        self._sync()

    def _sync(self) -> None:
        """After the entries changed: the table's order becomes theirs, and the slots of entries no longer
        tracked are freed (with them the table's references to their parameters)."""
        self._order = [e for entries in self.entries.values() for e in entries]
        self._by_slot = {e.slot: e for e in self._order}
        self._slot_names = {e.slot: name for name, entries in self.entries.items() for e in entries}
        self.params.set_order([e.slot for e in self._order])

    def _all(self) -> list[_Entry]:
        if self._modules_registered:
            # A submodule was set somewhere since the last write (torch's global hook): it may be a tracked
            # model's new part (a head put on for fine-tuning), whose parameters the entries lack.
            self._modules_registered = False
            for name, obj in list(self.objects.items()):
                self.track(obj, name)
        replaced = self.params.replaced()  # one dict lookup per parameter, in C++
        for name in dict.fromkeys(self._slot_names[slot] for slot in replaced):
            if name in self.entries:
                self.track(self.objects[name], name)  # a parameter was replaced: follow the module
        return self._order

    def _write(self, slots: list[int] | None, mode, dump_loc, only_changed: bool, claims=None,
               effect: int = None) -> None:
        """Write the states of `slots` (TrackedParams slots; None: every tracked parameter, in order), only
        those that changed with `only_changed`. `claims`: a function giving the claims written with them,
        digests refreshed (an optimizer's step: _step_claims; the end of the run: final_claims; a pass
        updating parameters by hand: _hand_claims). `effect`: what the gradients seen changed mean
        (_COMPUTED unless told: backward computed them)."""
        if not (len(self.params) if slots is None else slots) or not self.core.is_recording():
            return
        previous = self.core.set_inside_recorder(True)  # the digests' torch calls are not traced
        try:
            tensors, codes = self.params.detect(slots, only_changed)
            if tensors:
                self._states.assign(self.params, codes, self.digester.digests_later(tensors))
            lists = self.params.written_lists()
            if lists is not None:
                self._states.record_var_states(*lists, self._var_type_id, self._id(mode), self._id(dump_loc),
                                               None if claims is None else claims())
            self.params.after_write(_COMPUTED if effect is None else effect)
        finally:
            self.core.set_inside_recorder(previous)

    def _step_claims(self, optimizer, resets_claimed: bool = True) -> dict[str, list]:
        """The claims at `optimizer`'s step for the write's parameters (TrackedParams.step_claims, the module
        docstring), a list per claim keyed by the name `_core.step_claims()` declares it under; without
        `resets_claimed`, the two claims of gradient resets between steps are made for no parameter. The
        verdicts over forwards and sampler iterations are taken by the step that claims them."""
        try:
            seen = self._seen_by.get(optimizer)
        except TypeError:  # an optimizer-like object without weak references
            seen = None
        first_sight = None if seen is None else seen.first_sight
        judged = seen is not None and seen.steps >= _GRACE_STEPS
        sampler, self._sampler_verdict = self._sampler_verdict, None
        claims = self.params.step_claims(id(optimizer), getattr(optimizer, "param_groups", ()), first_sight, judged,
                                         sampler, self._eval_forwards, self._ddp_forwards)
        if not resets_claimed:
            claims["grad_reset"] = claims["grad_reset_once"] = None
        return claims

    def _hand_claims(self) -> dict[str, list] | None:
        """At an iteration boundary with no optimizer step since the last one, for the parameters whose data
        changed since then (updated by hand, in place under no_grad): whether the gradient was reset since
        their previous update (_Entry.reset_by_hand). Their gradients' accumulations are counted from their
        first update on (_Entry.count_accumulations), so the claim starts at their second. And, as an
        optimizer's step takes it, the verdict over the evaluation forwards of each parameter's model since
        the last boundary that took it (a validation loop, then training goes on: its next boundary)."""
        resets = [self._by_slot[slot].reset_by_hand(self.params.resets(slot), self.params.clips(slot),
                                                    self.params.digest(2 * slot))
                  for slot in self.params.written_slots()]
        evaluating = self.params.take_eval_verdicts(self._eval_forwards)  # taken by this boundary
        if all(r is None for r in resets) and all(v is None for v in evaluating):
            return None
        return {"grad_reset": resets, "eval_in_validation": evaluating}
