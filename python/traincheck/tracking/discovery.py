"""The models an optimizer trains, found without the user naming them (tracking without --models-to-track).

At an optimizer's step the tracker asks which of the parameters it holds are not tracked yet. The answer
comes from the modules alive in the process: a *root* is a module no other live module holds as a
submodule (the model a script builds, a DDP wrapper, each of a GAN's two networks, a teacher and its
student). Each root holding a parameter the optimizer steps is tracked as if the user had named it; a
parameter no module holds (a tensor handed to the optimizer by itself) is tracked as a tensor.

Why the garbage collector's list of objects rather than torch's module registration hooks: a module
rebuilt by `copy.deepcopy` (an EMA or teacher copy) or unpickled by `torch.load` sets its `__dict__`
directly, and no registration hook sees it. The walk is one pass over the live objects; it runs at the
first step boundary (the optimizers built before the training loop: their models' states before any
update are written) and when an optimizer steps with parameters the tracker does not know (its first
step, a group added later), never per step.

Names are deterministic across runs and ranks (Consistency compares parameters by name across ranks):
a root is named after its class, the model inside a wrapper after the wrapped model's class (DDP's
`module`, torch.compile's `_orig_mod`), with `#2`, `#3` for a second and third root of one class, in the
order of the optimizer's parameters.
"""

from __future__ import annotations

import gc

import torch

# Wrappers whose parameters are their inner model's, under the inner model's own names.
_WRAPPED_ATTRS = ("module", "_orig_mod")


def dynamo_is_tracing() -> bool:
    """Whether torch.compile's dynamo is tracing the calling frame (a compiled optimizer step runs the
    step hooks inside its trace)."""
    compiler = getattr(torch, "compiler", None)
    is_compiling = getattr(compiler, "is_compiling", None)
    return bool(is_compiling is not None and is_compiling())


def live_roots() -> list[torch.nn.Module]:
    """Every live module that no live module holds as a submodule."""
    # type(), not isinstance: isinstance reads __class__, which a lazy or deprecated attribute of some
    # live object can answer with a warning on the user's stderr.
    module_type = torch.nn.Module
    modules = [o for o in gc.get_objects() if issubclass(type(o), module_type)]
    children = set()
    for m in modules:
        for child in m._modules.values():
            if child is not None:
                children.add(id(child))
    return [m for m in modules if id(m) not in children]


def live_optimizers() -> list:
    """Every live torch optimizer, in the garbage collector's order."""
    optimizer_type = torch.optim.Optimizer
    return [o for o in gc.get_objects() if issubclass(type(o), optimizer_type)]


def unwrapped(root: torch.nn.Module) -> torch.nn.Module:
    """The model inside a wrapper that holds nothing of its own (DDP, a torch.compile'd module)."""
    for _ in range(4):  # a compiled DDP model is two wrappers deep
        inner = None
        for attr in _WRAPPED_ATTRS:
            candidate = root._modules.get(attr)
            if isinstance(candidate, torch.nn.Module) and len(root._modules) == 1 and not root._parameters:
                inner = candidate
        if inner is None:
            return root
        root = inner
    return root


def optimizer_parameters(optimizer) -> list:
    """The tensors an optimizer holds, in its groups' order."""
    return [p for group in getattr(optimizer, "param_groups", ()) for p in group.get("params", ())
            if isinstance(p, torch.Tensor)]


def owners_of(params: list, known_names: set[str]) -> list[tuple[str, object, object]]:
    """(name, module or tensor, root) to track so that every tensor of `params` is tracked: the roots
    holding them (unwrapped; the root itself is the wrapper, a DDP whose forward the tracker watches), in
    the order of the first parameter each holds, then the tensors no module holds (root None).
    `known_names`: names taken already (tracked models), never reused."""
    wanted = {id(p) for p in params}
    holder = {}  # parameter id -> the root holding it first
    for root in live_roots():
        for p in root.parameters():
            if id(p) in wanted and id(p) not in holder:
                holder[id(p)] = root
    out, taken, seen_roots = [], set(known_names), set()
    for p in params:
        root = holder.get(id(p))
        if root is None or id(root) in seen_roots:
            continue
        seen_roots.add(id(root))
        model = unwrapped(root)
        out.append((_fresh_name(type(model).__name__, taken), model, root))
    loose = [p for p in params if id(p) not in holder]
    for i, p in enumerate(loose):
        out.append((_fresh_name(f"{type(p).__name__}_{i}", taken), p, None))
    return out


def models_trained_by_hand(known_names: set[str], versions: dict[int, int]) -> list[tuple[str, object, object]]:
    """(name, model, root) as owners_of gives them, for the live roots holding a parameter that has a
    gradient, or whose data changed since `versions` (parameter id -> its version, as the previous call
    left it; updated here): what a loop updating parameters by hand (no optimizer) trains, whether it
    leaves the gradients in place or sets them to None."""
    params = []
    for root in live_roots():
        for p in root.parameters():
            if not p.requires_grad:
                continue
            last = versions.get(id(p))
            versions[id(p)] = p._version
            if p.grad is not None or (last is not None and last != p._version):
                params.append(p)
    return owners_of(params, known_names) if params else []


def _fresh_name(base: str, taken: set[str]) -> str:
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}#{n}"
    taken.add(name)
    return name
