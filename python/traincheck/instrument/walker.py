"""Finds the functions to wrap: every function and class method reachable from the loaded modules of the
instrumented packages, named as the original names them (docs/collection.md §Which functions are wrapped).

A method is found in, and named after, the class that defines it (``torch.nn.modules.module.Module.train``
for every Module subclass). Each (owner, attribute) that holds a function is one target, so a function
re-exported by several modules is replaced everywhere it can be reached.

With ``instr_descriptors`` (``--instr-descriptors``; selective mode always asks for them) the C method
descriptors that a walked class inherits from an immutable C base are targets too: ``torch.Tensor``'s
``normal_``, ``add_``, ... come from ``torch._C.TensorBase``, which cannot be patched, so the wrapper is
set on ``torch.Tensor`` and named as the original names it, ``torch._C.TensorBase.normal_``.
"""

from __future__ import annotations

import re
import sys
import types
from dataclasses import dataclass
from typing import Callable, Iterator, Optional

from traincheck.instrument import rules

_FUNCTION_TYPES = (types.FunctionType, types.BuiltinFunctionType)


# type() rather than isinstance(): isinstance falls back to __class__, which some module attributes
# (torch's deprecation proxies) turn into a warning.
def _is_class(value) -> bool:
    return issubclass(type(value), type)


def _is_function(value) -> bool:
    return issubclass(type(value), _FUNCTION_TYPES)


@dataclass(frozen=True)
class Target:
    owner: object  # module or class whose attribute is replaced
    attr: str
    original: Callable
    api_name: str
    container: str  # "plain" (module attribute), "method", "staticmethod", "classmethod"
    is_bound_method: bool


def api_name(func) -> Optional[str]:
    """The original's typename(): ``<__module__>.<__qualname__>`` with a ``builtins`` module dropped."""
    module = getattr(func, "__module__", None)
    qualname = getattr(func, "__qualname__", None) or getattr(func, "__name__", None)
    if not isinstance(qualname, str):
        return None
    if not isinstance(module, str) or module == "builtins":
        return qualname
    return f"{module}.{qualname}"


# The original parses a method descriptor's name from its repr (typename() in its utils.py): the descriptor
# has no __module__, and its __qualname__ lacks the C type's module ("TensorBase.normal_").
_DESCRIPTOR_REPR = re.compile(r"<method '(\w+)' of '([\w\.]+)' objects>")


def descriptor_api_name(descriptor) -> Optional[str]:
    """``<method 'normal_' of 'torch._C.TensorBase' objects>`` -> ``torch._C.TensorBase.normal_``."""
    match = _DESCRIPTOR_REPR.match(repr(descriptor))
    return f"{match.group(2)}.{match.group(1)}" if match else None


def first_param_is_self(func) -> bool:
    """The original's static bound-ness: the first parameter is named ``self``."""
    code = getattr(func, "__code__", None)
    if code is None:
        return False
    return code.co_argcount > 0 and code.co_varnames[0] == "self"


def _is_under(name: str, root: str) -> bool:
    return name == root or name.startswith(root + ".")


def skip_module(name: str) -> bool:
    """Modules never walked (the original's INSTR_MODULES_TO_SKIP, and code that wrapping breaks)."""
    return name.startswith(rules.MODULES_TO_SKIP) or name.startswith(rules.NEVER_WRAP)


def loaded_modules(root: str) -> list[types.ModuleType]:
    mods = []
    for name, mod in list(sys.modules.items()):
        if mod is None or not _is_under(name, root) or skip_module(name):
            continue
        mods.append(mod)
    return mods


def _safe_items(namespace) -> list:
    try:
        return list(vars(namespace).items())
    except TypeError:
        return []


_IMMUTABLE_TYPE = 1 << 8  # Py_TPFLAGS_IMMUTABLETYPE: setattr on the type raises TypeError


def _is_immutable(cls: type) -> bool:
    return bool(cls.__flags__ & _IMMUTABLE_TYPE)


def _descriptor_targets(cls: type, root: str, use_full_instr: bool) -> Iterator[Target]:
    """The C method descriptors `cls` inherits from the immutable C types right above it in its MRO.
    Only the first patchable class below a C type gets the wrapper (torch.Tensor, not Parameter, which
    inherits the wrapper from it), so each descriptor is replaced once. A descriptor is called with self
    first, like a Python method: the wrapper binds (container "method") and records self as args[0]."""
    if _is_immutable(cls):
        return
    own = vars(cls)
    for base in cls.__mro__[1:]:
        if not _is_immutable(base):
            return  # inherited through a patchable class: that class is the descriptor's owner
        for attr, value in _safe_items(base):
            if type(value) is not types.MethodDescriptorType or attr in own or rules.skip_attribute_name(attr):
                continue
            if getattr(cls, attr, None) is not value:
                continue  # overridden by a class between (a Python method of the same name)
            name = descriptor_api_name(value)
            if name is None or rules.skip_api(name, root, use_full_instr):
                continue
            yield Target(cls, attr, value, name, "method", True)


def _class_targets(cls: type, root: str, use_full_instr: bool, seen: set, is_wrapped,
                   instr_descriptors: bool) -> Iterator[Target]:
    if id(cls) in seen:
        return
    seen.add(id(cls))
    if instr_descriptors:
        yield from _descriptor_targets(cls, root, use_full_instr)
    for attr, value in _safe_items(cls):
        if rules.skip_attribute_name(attr):
            continue
        if _is_class(value):
            if isinstance(value.__module__, str) and _is_under(value.__module__, root):
                yield from _class_targets(value, root, use_full_instr, seen, is_wrapped, instr_descriptors)
            continue
        if type(value) is staticmethod:
            func, container = value.__func__, "staticmethod"
        elif type(value) is classmethod:
            func, container = value.__func__, "classmethod"
        elif type(value) is types.FunctionType:
            func, container = value, "method"
        else:
            continue  # properties, data, C method descriptors (a C type's own: it cannot be patched)
        if not _is_function(func) or is_wrapped(func):
            continue
        name = api_name(func)
        if name is None or rules.skip_api(name, root, use_full_instr):
            continue
        yield Target(cls, attr, func, name, container, container == "method" and first_param_is_self(func))


def find_targets(roots: list[str], use_full_instr: bool, is_wrapped: Callable[[object], bool],
                 instr_descriptors: bool = False) -> list[Target]:
    """Every wrappable (owner, attribute) under the given root packages, in a stable order; C method
    descriptors only with `instr_descriptors`."""
    targets: list[Target] = []
    seen_classes: set[int] = set()
    for root in roots:
        for mod in loaded_modules(root):
            targets.extend(module_targets(mod, root, use_full_instr, is_wrapped, instr_descriptors, seen_classes))
    return targets


def module_targets(mod: types.ModuleType, root: str, use_full_instr: bool, is_wrapped: Callable[[object], bool],
                   instr_descriptors: bool = False, seen_classes: Optional[set] = None) -> Iterator[Target]:
    """The targets one module's namespace reaches: its functions, and the methods of the classes of the
    root package it holds (a class already walked, by id in `seen_classes`, is not walked again)."""
    seen_classes = set() if seen_classes is None else seen_classes
    for attr, value in _safe_items(mod):
        if _is_class(value):
            if isinstance(value.__module__, str) and _is_under(value.__module__, root):
                yield from _class_targets(value, root, use_full_instr, seen_classes, is_wrapped, instr_descriptors)
            continue
        if not _is_function(value) or rules.skip_attribute_name(attr) or is_wrapped(value):
            continue
        name = api_name(value)
        if name is None or rules.skip_api(name, root, use_full_instr):
            continue
        yield Target(mod, attr, value, name, "plain", False)
