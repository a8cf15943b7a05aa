"""Modules of the instrumented packages imported after collection starts (docs/collection.md §Modules
imported later).

Libraries load much of themselves at first use: transformers' `_LazyModule` imports
`generation/utils` (`generate`) and each `models/<name>/modeling_*.py` when the script first touches
them, torch imports `torch.distributed.*` or `torch.utils.checkpoint` on demand, and a script may import
a library in the middle of its run. A post-import hook (traincheck.post_import) walks each such module
once it has executed, with the same rules and options as the modules walked at the start: in full mode
everything it defines is wrapped, in selective mode the functions the plan names (a plan may name
functions whose module is not loaded yet). A module imports its own imports first, so the functions it
binds by name (`from .sdpa_attention import sdpa_attention_forward`) are already wrappers.

torch's compiler (rules.COMPILER_MODULES), which torch.compile imports at its first compile, is never
walked: compiler work is not training, and compiled programs must run as without the tool.
"""

from __future__ import annotations

import threading
from typing import Callable

from traincheck.instrument import rules
from traincheck.instrument.installer import InstallReport, install
from traincheck.instrument.walker import module_targets, skip_module


class LaterImports:
    """The post-import hook: `hook(name)` says whether a module about to be imported is walked."""

    def __init__(self, roots: list[str], use_full_instr: bool, is_wrapped: Callable[[object], bool],
                 instr_descriptors: bool, options_for, report: InstallReport):
        self._roots = tuple(roots)
        self._first_parts = frozenset(r.partition(".")[0] for r in roots)
        self._use_full_instr = use_full_instr
        self._is_wrapped = is_wrapped
        self._instr_descriptors = instr_descriptors
        self._options_for = options_for
        self.report = report
        self.modules_walked: list[str] = []
        # Called with what the modules walked since the last call wrapped, once an import is over
        # (flush_installed; the runtime publishes the new APIs' signatures).
        self.on_installed: Callable[[InstallReport], object] | None = None
        self._unpublished = InstallReport()
        self._lock = threading.Lock()  # threads may import at the same time

    def root_of(self, name: str):
        if name.partition(".")[0] not in self._first_parts:  # the common case: one split, one set lookup
            return None
        for root in self._roots:
            if name == root or name.startswith(root + "."):
                return root
        return None

    def hook(self, name: str):
        root = self.root_of(name)
        if root is None or skip_module(name) or name.startswith(rules.COMPILER_MODULES):
            return None
        return lambda module: self.instrument(module, root)

    def instrument(self, module, root: str) -> None:
        targets = list(module_targets(module, root, self._use_full_instr, self._is_wrapped, self._instr_descriptors))
        installed = install(targets, self._options_for)
        self.report.merge(installed)
        self.modules_walked.append(module.__name__)
        if installed.wrappers:
            with self._lock:
                self._unpublished.merge(installed)

    def flush_installed(self) -> None:
        """Hands what was wrapped since the last flush to `on_installed`, in one piece: called when an
        import is over (post_import.after_outermost_import), not per module, because publishing rewrites
        a file and an import can execute a hundred modules."""
        with self._lock:
            batch, self._unpublished = self._unpublished, InstallReport()
        if self.on_installed is not None and batch.wrappers:
            self.on_installed(batch)
