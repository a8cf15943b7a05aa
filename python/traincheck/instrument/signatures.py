"""api_signatures.json: the signatures of the APIs a trace mentions, for the analyzer (cpp/trace/README.md).

The original imports torch at analysis time to bind arguments to parameter names (context managers'
__init__ arguments, argument constraints). Ours records the signatures while torch is loaded anyway, so
the analyzer never imports it.
"""

from __future__ import annotations

import inspect
import json
import os

from traincheck import _core


def _json_default(value):
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return str(value)


def signature_entry(func, drop_first: bool = False) -> dict | None:
    """The signature as the trace's arguments see it: a classmethod's `cls` is not among them."""
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):
        return None
    params = []
    for p in list(sig.parameters.values())[1 if drop_first else 0 :]:
        entry = {"name": p.name, "kind": p.kind.name}
        if p.default is not inspect.Parameter.empty:
            entry["default"] = _json_default(p.default)
        params.append(entry)
    return {"params": params}


def write_signatures(wrappers: dict, output_dir: str, classmethods: frozenset = frozenset()) -> None:
    """Signatures of the wrapped APIs that recorded calls, merged with what other processes wrote."""
    path = os.path.join(output_dir, "api_signatures.json")
    entries = {}
    for name, wrapper in wrappers.items():
        if _core.was_called(wrapper):
            entry = signature_entry(_core.unwrap(wrapper), drop_first=name in classmethods)
            if entry is not None:
                entries[name] = entry
    if not entries:
        return
    try:
        with open(path) as f:
            entries = {**json.load(f), **entries}
    except (OSError, json.JSONDecodeError):
        pass
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w") as f:
            json.dump(entries, f, sort_keys=True)
        os.replace(tmp, path)  # atomic: ranks and workers may finish at the same time
    except OSError:
        try:  # a full disk must not leave a half-written temporary file behind
            os.remove(tmp)
        except OSError:
            pass
        raise
