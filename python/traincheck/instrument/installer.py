"""Replaces targets with C-level wrappers (traincheck._core) and can undo it.

A wrapper records calls only when asked: in selective mode every function not named by an invariant is
left untouched (not wrapped at all), and the named ones record exactly what their invariants need.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from traincheck import _core
from traincheck.instrument import responses
from traincheck.instrument.arg_filter import argument_filter
from traincheck.instrument.compile_support import PendingShim, mark_traceable, needs_function_shim
from traincheck.instrument.walker import Target


@dataclass(frozen=True)
class CallOptions:
    dump_args: bool = False
    dump_return: bool = False
    dump_stack: bool = False
    track_vars: bool = False  # run the tracker's variable hook around calls
    # With dump_args: the arguments to record (parameter names or positional indices); None: all.
    arg_names: frozenset | None = None


@dataclass
class InstallReport:
    wrapped_targets: int = 0
    failed_targets: int = 0
    api_names: set = field(default_factory=set)
    wrappers: dict = field(default_factory=dict, repr=False)  # API name -> wrapper
    classmethods: set = field(default_factory=set, repr=False)  # API names recorded without `cls`
    # Methods a class must hold as real functions once torch.compile runs (compile_support.swap_in_shims).
    pending_shims: list = field(default_factory=list, repr=False)
    _undo: list = field(default_factory=list, repr=False)

    def merge(self, later: "InstallReport") -> None:
        """Add what a later install (a module imported after the start) wrapped."""
        self.wrapped_targets += later.wrapped_targets
        self.failed_targets += later.failed_targets
        self.api_names |= later.api_names
        for name, wrapper in later.wrappers.items():
            self.wrappers.setdefault(name, wrapper)
        self.classmethods |= later.classmethods
        self.pending_shims.extend(later.pending_shims)
        self._undo.extend(later._undo)

    def uninstall(self) -> None:
        """Restore every replaced attribute (tests; a collect run keeps the wrappers to the end)."""
        for owner, attr, previous, owned in reversed(self._undo):
            try:
                if owned:
                    setattr(owner, attr, previous)
                else:
                    delattr(owner, attr)  # the attribute was inherited (e.g. from a C base class)
            except (AttributeError, TypeError):
                pass
        self._undo.clear()


def install(targets: list[Target], options_for) -> InstallReport:
    """Wrap every target; `options_for(api_name)` gives its CallOptions, or None to leave it alone."""
    report = InstallReport()
    # (id(original), container) -> (wrapper, what it wraps, the API name it records, _core.wrap's options)
    made: dict[tuple[int, str], tuple] = {}
    for t in targets:
        opts = options_for(t.api_name)
        if opts is None:
            continue
        binds = t.container == "method"
        key = (id(t.original), t.container)
        if key not in made:
            drop_cls = t.container == "classmethod"
            selected = argument_filter(t.original, opts.arg_names, drop_cls) if opts.arg_names is not None else None
            wrapped = responses.marking_responses(t.original) if responses.marks_responses(t.api_name) else t.original
            wrap_options = dict(
                dump_args=opts.dump_args,
                dump_return=opts.dump_return,
                is_bound_method=t.is_bound_method,
                dump_stack=opts.dump_stack,
                track_vars=opts.track_vars,
                omit_first_arg=drop_cls,
                arg_positions=selected[0] if selected else None,
                arg_keywords=selected[1] if selected else (),
            )
            wrapper = _core.wrap(wrapped, t.api_name, binds=binds, **wrap_options)
            mark_traceable(wrapper, wrapped, binds)  # torch.compile traces the original
            made[key] = (wrapper, wrapped, t.api_name, wrap_options)
        wrapper, wrapped, recorded_name, wrap_options = made[key]
        if t.container == "staticmethod":
            replacement = staticmethod(wrapper)
        elif t.container == "classmethod":
            replacement = classmethod(wrapper)
        else:
            replacement = wrapper
        previous = vars(t.owner).get(t.attr)
        try:
            setattr(t.owner, t.attr, replacement)
        except (AttributeError, TypeError):
            report.failed_targets += 1
            continue
        report._undo.append((t.owner, t.attr, previous, previous is not None))
        if needs_function_shim(t.owner, t.original, binds):  # every class holding it, aliases too
            report.pending_shims.append(PendingShim(t.owner, t.attr, wrapper, wrapped, recorded_name, wrap_options))
        report.wrapped_targets += 1
        report.api_names.add(t.api_name)
        report.wrappers.setdefault(t.api_name, wrapper)
        if t.container == "classmethod":
            report.classmethods.add(t.api_name)
    return report
