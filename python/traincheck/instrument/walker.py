"""Finds the functions to wrap: every function and class method reachable from the loaded modules of the
instrumented packages, named as the original names them (docs/collection.md §Which functions are wrapped).

A method is found in, and named after, the class that defines it (``torch.nn.modules.module.Module.train``
for every Module subclass). Each (owner, attribute) that holds a function is one target, so a function
re-exported by several modules is replaced everywhere it can be reached.
"""

from __future__ import annotations

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


def first_param_is_self(func) -> bool:
    """The original's static bound-ness: the first parameter is named ``self``."""
    code = getattr(func, "__code__", None)
    if code is None:
        return False
    return code.co_argcount > 0 and code.co_varnames[0] == "self"


def _is_under(name: str, root: str) -> bool:
    return name == root or name.startswith(root + ".")


def loaded_modules(root: str) -> list[types.ModuleType]:
    mods = []
    for name, mod in list(sys.modules.items()):
        if mod is None or not _is_under(name, root):
            continue
        if name.startswith(rules.MODULES_TO_SKIP) or name.startswith(rules.NEVER_WRAP):
            continue
        mods.append(mod)
    return mods


def _safe_items(namespace) -> list:
    try:
        return list(vars(namespace).items())
    except TypeError:
        return []


def _class_targets(cls: type, root: str, use_full_instr: bool, seen: set, is_wrapped) -> Iterator[Target]:
    if id(cls) in seen:
        return
    seen.add(id(cls))
    for attr, value in _safe_items(cls):
        if rules.skip_attribute_name(attr):
            continue
        if _is_class(value):
            if isinstance(value.__module__, str) and _is_under(value.__module__, root):
                yield from _class_targets(value, root, use_full_instr, seen, is_wrapped)
            continue
        if type(value) is staticmethod:
            func, container = value.__func__, "staticmethod"
        elif type(value) is classmethod:
            func, container = value.__func__, "classmethod"
        elif type(value) is types.FunctionType:
            func, container = value, "method"
        else:
            continue  # properties, C method descriptors (--instr-descriptors is not supported), data
        if not _is_function(func) or is_wrapped(func):
            continue
        name = api_name(func)
        if name is None or rules.skip_api(name, root, use_full_instr):
            continue
        yield Target(cls, attr, func, name, container, container == "method" and first_param_is_self(func))


def find_targets(roots: list[str], use_full_instr: bool, is_wrapped: Callable[[object], bool]) -> list[Target]:
    """Every wrappable (owner, attribute) under the given root packages, in a stable order."""
    targets: list[Target] = []
    seen_classes: set[int] = set()
    for root in roots:
        for mod in loaded_modules(root):
            for attr, value in _safe_items(mod):
                if _is_class(value):
                    if isinstance(value.__module__, str) and _is_under(value.__module__, root):
                        targets.extend(_class_targets(value, root, use_full_instr, seen_classes, is_wrapped))
                    continue
                if not _is_function(value) or rules.skip_attribute_name(attr) or is_wrapped(value):
                    continue
                name = api_name(value)
                if name is None or rules.skip_api(name, root, use_full_instr):
                    continue
                targets.append(Target(mod, attr, value, name, "plain", False))
    return targets
