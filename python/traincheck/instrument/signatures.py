"""api_signatures.json: the signatures of the APIs a trace mentions, for the analyzer (cpp/trace/README.md).

The original imports torch at analysis time to bind arguments to parameter names (context managers'
__init__ arguments, argument constraints). Ours records the signatures while torch is loaded anyway, so
the analyzer never imports it.
"""

from __future__ import annotations

import inspect
import json
import os

from traincheck import _core, output_files


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


def signature_entries(wrappers: dict, classmethods: frozenset = frozenset()) -> dict:
    """{api name: signature entry} of every wrapped API that has a signature."""
    entries = {}
    for name, wrapper in wrappers.items():
        entry = signature_entry(_core.unwrap(wrapper), drop_first=name in classmethods)
        if entry is not None:
            entries[name] = entry
    return entries


# What this process last wrote, per file: (the file's identity after the write, the merged entries). While
# the file is the one we wrote, it is not read back: a process publishing after each import would
# otherwise parse a file of ten thousand entries each time (quadratic; 13 s of a 20 s collect of a tiny
# script that imports torch._dynamo).
_last_written: dict[str, tuple[tuple, dict]] = {}


def _identity(path: str) -> tuple | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def publish_signatures(entries: dict, output_dir: str) -> None:
    """Merges `entries` into <output_dir>/api_signatures.json: under an exclusive lock (ranks and workers
    of one run publish at the same time; without it, one's read-merge-write could drop another's
    entries), written to a temporary file and renamed, so that a reader (a live traincheck-onlinecheck)
    sees the old file or the new one, never half of one. Nothing is written when nothing is new. The file
    is read only when another process changed it since this one wrote it."""
    import fcntl

    if not entries:
        return
    path = os.path.join(output_dir, "api_signatures.json")
    with output_files.open_output(os.path.join(output_dir, ".api_signatures.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        identity, merged = _last_written.get(path, (None, None))
        if merged is None or identity is None or _identity(path) != identity:
            try:
                with open(path) as f:
                    merged = json.load(f)
            except (OSError, json.JSONDecodeError):
                merged = {}
        if all(merged.get(name) == entry for name, entry in entries.items()):
            return
        merged = {**merged, **entries}
        # The C encoder: json.dump to a file is pure Python.
        output_files.replace_output(path, json.dumps(merged, sort_keys=True, default=str))
        _last_written[path] = (_identity(path), merged)
