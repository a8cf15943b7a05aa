"""Which arguments a selectively wrapped API records: those its invariants constrain, nothing else.

An invariant names arguments by parameter name ("training") or, where the signature was unknown when it
was learned, by positional index ("1"); the original's dump_args_config lists both. The C++ wrapper
filters by positional index and by keyword name, so each name is mapped here, once at wrap time, to the
position it would take when passed positionally. Capturing a tensor costs ~2 µs (torch's attribute
getters), so recording six lists of tensors that no invariant reads was most of selective mode's cost.
"""

from __future__ import annotations

import inspect

_MAX_POSITIONS = 64  # the wrapper's bit mask


def _positional_names(func, drop_first: bool) -> list[str] | None:
    """Parameter names that can be passed positionally, in order, as the recorded args number them
    (a classmethod's `cls` is not among them); None when the signature is unknown (C builtins)."""
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return None
    if drop_first:
        params = params[1:]
    names = []
    for p in params:
        if p.kind == inspect.Parameter.VAR_POSITIONAL:
            names.append(None)  # a marker: arguments from here on have no name
            break
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
    return names


def _var_positional_name(func) -> str | None:
    try:
        for p in inspect.signature(func).parameters.values():
            if p.kind == inspect.Parameter.VAR_POSITIONAL:
                return p.name
    except (TypeError, ValueError):
        pass
    return None


def argument_filter(func, names, drop_first: bool = False) -> tuple[int, tuple[str, ...]] | None:
    """(positions bit mask, keyword names) that record exactly the arguments `names` denotes, or None
    when that cannot be decided safely and every argument must be recorded: a name whose position the
    signature cannot give, a `*args` parameter named, or an index beyond the mask."""
    positions = 0
    keywords: set[str] = set()
    positional = None
    for name in names:
        name = str(name)
        if name.isdigit():
            index = int(name)
            if index >= _MAX_POSITIONS:
                return None
            positions |= 1 << index
            continue
        keywords.add(name)
        if positional is None:
            positional = _positional_names(func, drop_first)
            if positional is None:
                return None
        if name in positional:
            index = positional.index(name)
            if index >= _MAX_POSITIONS:
                return None
            positions |= 1 << index
        elif name == _var_positional_name(func):
            return None
        # else: keyword-only, **kwargs, or a name this version of the function lacks: keyword match only
    return positions, tuple(sorted(keywords))
