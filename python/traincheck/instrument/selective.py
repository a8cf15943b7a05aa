"""Selective instrumentation: from invariant files to per-API recording options
(docs/collection.md §Selective instrumentation).

Only the APIs that deployed invariants name are wrapped; each records what its invariants need to be
checked. Fixes the original's gaps: ConsistentOutput gets return values, DistinctArgument gets arguments,
ConsistentInputOutput and Threshold get both, and the context managers that preconditions name (autocast)
are recorded, so such clauses can hold.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from traincheck.instrument.installer import CallOptions

RELATIONS = frozenset(
    {
        "APIContainRelation",
        "ConsistencyRelation",
        "ConsistentOutputRelation",
        "ConsistentInputOutputRelation",
        "ThresholdRelation",
        "FunctionCoverRelation",
        "FunctionLeadRelation",
        "DistinctArgumentRelation",
    }
)
PARAM_TYPES = frozenset({"APIParam", "VarTypeParam", "VarNameParam", "InputOutputParam"})

# What a relation's check reads from the records of the APIs it names.
_NEEDS_RETURN = {"ConsistentOutputRelation", "ConsistentInputOutputRelation", "ThresholdRelation"}
_NEEDS_ARGS = {"DistinctArgumentRelation", "ConsistentInputOutputRelation", "ThresholdRelation"}


class InvariantFileError(ValueError):
    """A malformed invariant file; the message names the file, line and field."""


@dataclass
class InvariantApis:
    relation: str
    apis: list[str]


@dataclass
class FuncOptions:
    dump_args: bool = False
    dump_ret: bool = False
    # The arguments to record, when every reason to record them names them; empty: all of them.
    dump_args_config: dict = field(default_factory=dict)
    var_types_to_track: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        out = {
            "scan_proxy_in_args": False,
            "dump_args": self.dump_args,
            "dump_ret": self.dump_ret,
            "var_types_to_track": self.var_types_to_track,
        }
        if self.dump_args_config:
            out["dump_args_config"] = self.dump_args_config
        return out


def _fail(path: str, line: int, field_name: str, why: str):
    raise InvariantFileError(f"{path}:{line}: field '{field_name}': {why}")


def read_invariants(path: str) -> list[tuple[int, dict]]:
    """(line number, invariant dict) for each non-blank line of a JSON Lines invariant file."""
    out = []
    try:
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    inv = json.loads(line)
                except json.JSONDecodeError as e:
                    raise InvariantFileError(f"{path}:{lineno}: invalid JSON at column {e.colno}: {e.msg}") from None
                if not isinstance(inv, dict):
                    _fail(path, lineno, "<record>", "expected a JSON object")
                out.append((lineno, inv))
    except OSError as e:
        raise InvariantFileError(f"{path}: cannot read invariant file: {e.strerror}") from None
    return out


def _apis_of(path: str, lineno: int, inv: dict) -> InvariantApis:
    relation = inv.get("relation")
    if relation not in RELATIONS:
        _fail(path, lineno, "relation", f"unknown relation {relation!r}")
    params = inv.get("params")
    if not isinstance(params, list) or not params:
        _fail(path, lineno, "params", "expected a non-empty list")
    apis = []
    for i, p in enumerate(params):
        ptype = p.get("param_type") if isinstance(p, dict) else None
        if ptype not in PARAM_TYPES:
            _fail(path, lineno, f"params[{i}].param_type", f"unknown param type {ptype!r}")
        if ptype == "APIParam":
            name = p.get("api_full_name")
            if not isinstance(name, str):
                _fail(path, lineno, f"params[{i}].api_full_name", "expected a string")
            apis.append(name)
        elif ptype == "InputOutputParam" and isinstance(p.get("api_name"), str):
            apis.append(p["api_name"])
    return InvariantApis(relation, apis)


def _argument_config(param: dict) -> dict:
    """The original's dump_args_config: each constrained argument (and nothing else) by name."""
    arguments = param.get("arguments")
    if not isinstance(arguments, dict):
        return {}
    return {name: None for name in (arguments.get("args") or {})}


def build_plan(invariant_paths: list[str]) -> "SelectivePlan":
    funcs: dict[str, FuncOptions] = {}
    invariants: list[InvariantApis] = []
    all_args: set[str] = set()  # APIs some relation needs every argument of
    for path in invariant_paths:
        for lineno, inv in read_invariants(path):
            entry = _apis_of(path, lineno, inv)
            invariants.append(entry)
            for api in entry.apis:
                opts = funcs.setdefault(api, FuncOptions())
                opts.dump_args |= entry.relation in _NEEDS_ARGS
                opts.dump_ret |= entry.relation in _NEEDS_RETURN
                if entry.relation in _NEEDS_ARGS:
                    all_args.add(api)
            for p in inv["params"]:
                if p.get("param_type") == "APIParam" and p.get("arguments"):
                    opts = funcs[p["api_full_name"]]
                    opts.dump_args = True
                    opts.dump_args_config.update(_argument_config(p))
            if entry.relation == "APIContainRelation":
                child = inv["params"][-1]
                if child.get("param_type") in ("VarTypeParam", "VarNameParam"):
                    parent = entry.apis[0] if entry.apis else None
                    if parent:
                        funcs[parent].var_types_to_track[child.get("var_type")] = {"dump_unchanged": False}
            for manager in _context_managers_of(inv):
                # Their spans and __init__ arguments are what such clauses read, offline and online.
                for method in ("__init__", "__enter__", "__exit__"):
                    funcs.setdefault(f"{manager}.{method}", FuncOptions())
                funcs[f"{manager}.__init__"].dump_args = True
                all_args.add(f"{manager}.__init__")
    for api in all_args:
        funcs[api].dump_args_config = {}
    return SelectivePlan(funcs, invariants)


_CONTEXT_MANAGER_PREFIX = "meta_vars.context_managers."


def _context_managers_of(inv: dict) -> set[str]:
    """The context managers an invariant's precondition clauses name (meta_vars.context_managers.X)."""
    out = set()
    precondition = inv.get("precondition")
    groups = precondition.values() if isinstance(precondition, dict) else []
    for group in groups:
        for conjunction in (group or {}).get("preconditions") or []:
            clauses = conjunction.get("clauses") if isinstance(conjunction, dict) else None
            for clause in clauses if isinstance(clauses, list) else []:
                name = clause.get("prop_name") if isinstance(clause, dict) else None
                if isinstance(name, str) and name.startswith(_CONTEXT_MANAGER_PREFIX):
                    out.add(name[len(_CONTEXT_MANAGER_PREFIX):])
    return out


@dataclass
class SelectivePlan:
    funcs: dict[str, FuncOptions]
    invariants: list[InvariantApis]

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
        return {
            "funcs_instr_opts": {name: o.to_json() for name, o in sorted(self.funcs.items())},
            "model_tracker_style": model_tracker_style,
            "disable_proxy_dumping": True,
            # Ours only (the original ignores unknown keys): lets the traced process report coverage.
            "traincheck_invariants": [{"relation": i.relation, "apis": i.apis} for i in self.invariants],
        }


def write_instr_opts(plan: SelectivePlan, path: str, model_tracker_style: str | None) -> None:
    with open(path, "w") as f:
        json.dump(plan.to_instr_opts(model_tracker_style), f, indent=4)


def load_plan(instr_opts_path: str) -> SelectivePlan:
    """Reads instr_opts.json back (ours or the original's) in the traced process."""
    with open(instr_opts_path) as f:
        data = json.load(f)
    funcs = {}
    for name, o in data.get("funcs_instr_opts", {}).items():
        funcs[name] = FuncOptions(
            dump_args=bool(o.get("dump_args")),
            dump_ret=bool(o.get("dump_ret")),
            dump_args_config=o.get("dump_args_config") or {},
            var_types_to_track=o.get("var_types_to_track") or {},
        )
    invariants = [InvariantApis(**i) for i in data.get("traincheck_invariants", [])]
    return SelectivePlan(funcs, invariants)


def resolution_summary(plan: SelectivePlan, resolved_apis: set, roots: list[str]) -> dict:
    """How many invariants and APIs this library version could serve; named APIs it lacks."""
    missing = sorted(set(plan.funcs) - set(resolved_apis))
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
        "apis_resolved": len(plan.funcs) - len(missing),
        "missing_apis": missing,
        "library_versions": versions,
    }


def summary_line(summary: dict) -> str:
    versions = ", ".join(f"{k} {v}" for k, v in summary.get("library_versions", {}).items())
    return (
        f"selective: {summary['invariants_resolved']} of {summary['invariants_total']} invariants, "
        f"{summary['apis_resolved']} of {summary['apis_total']} APIs resolved in {versions}"
    )
