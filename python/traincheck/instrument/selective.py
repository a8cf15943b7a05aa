"""Selective instrumentation: installs the per-API recording options of instr_opts.json
(docs/collection.md §Selective instrumentation).

Only the APIs that deployed invariants name are wrapped; each records what its invariants need to be
checked. The C++ engine makes the plan from the invariant files (cpp/relations/selective_plan.h: each
relation says what it needs recorded); this module writes it for the traced process, reads it back there
and answers, per API, what its wrapper records.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field

from traincheck import output_files
from traincheck.instrument.installer import CallOptions


class InvariantFileError(ValueError):
    """A malformed invariant file; the message names the file, line and field."""


@dataclass
class InvariantApis:
    relation: str
    apis: list[str]
    var_types: list[str] = field(default_factory=list)  # the variable types whose states it reads


@dataclass
class FuncOptions:
    dump_args: bool = False
    dump_ret: bool = False
    # The arguments to record, when every reason to record them names them; empty: all of them.
    dump_args_config: dict = field(default_factory=dict)
    var_types_to_track: dict = field(default_factory=dict)


def build_plan(invariant_paths: list[str]) -> "SelectivePlan":
    """The plan the C++ engine makes from the invariant files (cpp/relations/selective_plan.h)."""
    from traincheck import _online

    for path in invariant_paths:
        try:
            open(path, "rb").close()
        except OSError as e:
            raise InvariantFileError(f"{path}: cannot read invariant file: {e.strerror}") from None
    try:
        instr_opts = _online.selective_plan([str(p) for p in invariant_paths])
    except ValueError as e:
        raise InvariantFileError(str(e)) from None
    return SelectivePlan.from_instr_opts(json.loads(instr_opts))


@dataclass
class SelectivePlan:
    funcs: dict[str, FuncOptions]
    invariants: list[InvariantApis]
    instr_opts: dict = field(default_factory=dict)  # the document it was read from, written back as is

    @staticmethod
    def from_instr_opts(data: dict) -> "SelectivePlan":
        """instr_opts.json (ours or the original's) as this process installs it."""
        funcs = {}
        for name, o in data.get("funcs_instr_opts", {}).items():
            funcs[name] = FuncOptions(
                dump_args=bool(o.get("dump_args")),
                dump_ret=bool(o.get("dump_ret")),
                dump_args_config=o.get("dump_args_config") or {},
                var_types_to_track=o.get("var_types_to_track") or {},
            )
        invariants = [InvariantApis(**i) for i in data.get("traincheck_invariants", [])]
        return SelectivePlan(funcs, invariants, data)

    def reads_var_type(self, var_type: str) -> bool:
        """Whether some invariant reads states of `var_type` (then the collector tracks such variables)."""
        return any(var_type in inv.var_types for inv in self.invariants)

    def options_for(self, api_name: str):
        opts = self.funcs.get(api_name)
        if opts is None:
            return None
        return CallOptions(
            dump_args=opts.dump_args,
            dump_return=opts.dump_ret,
            track_vars=bool(opts.var_types_to_track),
            arg_names=frozenset(opts.dump_args_config) if opts.dump_args_config else None,
        )

    def to_instr_opts(self, model_tracker_style: str | None) -> dict:
        return {**self.instr_opts, "model_tracker_style": model_tracker_style}


def overriding_exits(plan: SelectivePlan, targets) -> set:
    """The `__exit__` overrides, among `targets`, of subclasses of a context manager whose `__exit__` the plan
    names: the manager entered by its `__enter__` is exited through the subclass's (torch.save's
    `_open_file` exits what `_opener.__enter__` entered), and unrecorded, its span would run to the end of
    the trace (TraceStore::index_context_managers closes it on any class's `__exit__` of the object)."""
    exits = set()
    for t in targets:
        if t.attr != "__exit__" or not isinstance(t.owner, type) or t.api_name in plan.funcs:
            continue
        for base in t.owner.__mro__[1:]:
            if f"{getattr(base, '__module__', '')}.{getattr(base, '__qualname__', '')}.__exit__" in plan.funcs:
                exits.add(t.api_name)
                break
    return exits


def write_instr_opts(plan: SelectivePlan, path: str, model_tracker_style: str | None) -> None:
    with output_files.open_output(path, "w") as f:
        json.dump(plan.to_instr_opts(model_tracker_style), f, indent=4)


def load_plan(instr_opts_path: str) -> SelectivePlan:
    """Reads instr_opts.json back (ours or the original's) in the traced process."""
    with open(instr_opts_path) as f:
        return SelectivePlan.from_instr_opts(json.load(f))


def plan_roots(plan: SelectivePlan) -> list[str]:
    """The packages of the APIs the plan names (`transformers` for `transformers.generation.utils...`)."""
    return list(dict.fromkeys(name.partition(".")[0] for name in plan.funcs))


def not_imported_yet(api: str) -> bool:
    """Whether `api` may live in a module not imported yet: the first component after its deepest loaded
    module is a submodule that module's package has on disk, or no part is loaded and its package is on
    sys.path (looked up, never imported or executed)."""
    import importlib.machinery

    parts = api.split(".")
    for i in range(len(parts) - 1, 0, -1):
        module = sys.modules.get(".".join(parts[:i]))
        if module is None:
            continue
        path = getattr(module, "__path__", None)
        if path is None:
            return False
        try:
            return importlib.machinery.PathFinder.find_spec(".".join(parts[: i + 1]), list(path)) is not None
        except (ImportError, ValueError, TypeError):
            return False
    try:  # not even the package is loaded: a package on sys.path is imported later, or never
        return importlib.machinery.PathFinder.find_spec(parts[0]) is not None
    except (ImportError, ValueError, TypeError):
        return False


def resolution_summary(plan: SelectivePlan, resolved_apis: set, roots: list[str]) -> dict:
    """How many invariants and APIs this library version could serve; named APIs it lacks, and those whose
    module is not imported yet (they are wrapped when it is: traincheck.instrument.later_imports)."""
    unresolved = sorted(set(plan.funcs) - set(resolved_apis))
    pending = [api for api in unresolved if not_imported_yet(api)]
    missing = [api for api in unresolved if api not in set(pending)]
    ok_invariants = sum(1 for inv in plan.invariants if all(a in resolved_apis for a in inv.apis))
    versions = {}
    for root in roots:
        try:
            from importlib.metadata import version

            versions[root] = version(root)
        except Exception:  # noqa: BLE001 - a module without distribution metadata
            versions[root] = "unknown"
    return {
        "mode": "selective",
        "invariants_total": len(plan.invariants),
        "invariants_resolved": ok_invariants,
        "apis_total": len(plan.funcs),
        "apis_resolved": len(plan.funcs) - len(unresolved),
        "missing_apis": missing,
        "apis_not_imported_yet": pending,
        "library_versions": versions,
    }


def summary_line(summary: dict) -> str:
    """The resolution at the start of the run (a summary rewritten at exit keeps it under "at_start")."""
    summary = summary.get("at_start", summary)
    versions = ", ".join(f"{k} {v}" for k, v in summary.get("library_versions", {}).items())
    waiting = len(summary.get("apis_not_imported_yet", []))
    return (
        f"selective: {summary['invariants_resolved']} of {summary['invariants_total']} invariants, "
        f"{summary['apis_resolved']} of {summary['apis_total']} APIs resolved in {versions}"
        + (f" ({waiting} more wrapped when their module is imported)" if waiting else "")
    )
