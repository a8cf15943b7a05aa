"""Actions that run right after a module is imported: one `sys.meta_path` entry for all of traincheck's
post-import hooks (instrumenting modules imported after collection starts, the Trainer integrations,
torch.compile's callbacks).

The finder finds nothing itself. For a module some hook wants, it asks the finders after it for the spec
and gives that spec's own loader object an `exec_module` that runs the module, then the hooks; the
loader's class, and every other module's loader, stay as they were. For any other import it costs one
call per hook that looks at the name (a prefix test), so it never slows imports down noticeably
(bench/post_import_hook.py).

An import of one module often executes many hooked ones (importing torch._dynamo executes about 150
modules of torch.distributed and torch.utils). Work that is costly per call and can wait until the import
is over (publishing the new APIs' signatures rewrites a file) is registered with `after_outermost_import`:
it runs once when the outermost hooked module of the thread has executed, not once per module.

A module can also be executed quietly (`execute_quietly`): while its top-level code runs, the thread's
recording is off. Library modules imported after collection starts run their set-up there (torch's lazily
imported submodules call `torch.distributed.is_available`, register fake kernels, create loggers). Modules
imported before the start ran theirs unrecorded, so recording the later ones made the trace depend on what
happened to be imported first, not on what the program does (instrument/quiet_imports.py).
"""

from __future__ import annotations

import importlib.machinery
import sys
import threading
from typing import Callable, Optional

# A hook: given a module name about to be imported, the action to run on the executed module, or None.
Hook = Callable[[str], Optional[Callable[[object], None]]]

# Loaders that make one object per module spec, so that giving that object an `exec_module` of its own
# touches no other module (a loader shared by many modules, such as a meta-path importer that is its own
# loader, could be executing another module on another thread). Only these are ever run quietly.
_PER_SPEC_LOADERS = (importlib.machinery.SourceFileLoader, importlib.machinery.SourcelessFileLoader,
                     importlib.machinery.ExtensionFileLoader)


class _PostImportFinder:
    def __init__(self):
        self.hooks: list[Hook] = []
        self._searching = threading.local()  # names this thread is finding a spec for (re-entrancy)
        self._executing = threading.local()  # how many hooked modules this thread is executing (nesting)
        self.outermost_done: list[Callable[[], None]] = []
        # execute_quietly's: which module specs run with recording off, and the switch (it returns the
        # thread's previous setting).
        self.quiet: Optional[Callable[[object], bool]] = None
        self.set_recording_off: Optional[Callable[[bool], bool]] = None

    def _actions(self, fullname: str) -> list:
        actions = []
        for hook in list(self.hooks):
            action = hook(fullname)
            if action is not None:
                actions.append(action)
        return actions

    def find_spec(self, fullname, path, target=None):
        actions = self._actions(fullname)
        quiet_test, set_off = self.quiet, self.set_recording_off
        if not actions and quiet_test is None:
            return None
        searching = self._searching.__dict__.setdefault("names", set())
        if fullname in searching:
            return None
        searching.add(fullname)
        try:
            spec = self._spec_from_others(fullname, path, target)
        finally:
            searching.discard(fullname)
        if spec is None or spec.loader is None or isinstance(spec.loader, type):
            return spec  # not found, a namespace without loader, or a class used as loader (builtins)
        loader = spec.loader
        execute = getattr(loader, "exec_module", None)
        if execute is None:
            return spec
        quiet = (quiet_test is not None and type(loader) in _PER_SPEC_LOADERS
                 and bool(_run_guarded(quiet_test, fullname, spec, when="while importing", failed=False)))
        if not actions and not quiet:
            return spec  # what the finders after us found: the import system would find it again

        def exec_module(module):
            depth = getattr(self._executing, "depth", 0)
            self._executing.depth = depth + 1
            try:
                try:
                    _execute(execute, module, set_off if quiet else None)
                finally:
                    loader.__dict__.pop("exec_module", None)  # the loader as it was (a reload finds us again)
                for action in actions:
                    _run_guarded(action, fullname, module)
            finally:
                self._executing.depth = depth
            if depth == 0:
                for done in list(self.outermost_done):
                    _run_guarded(done, fullname)

        loader.exec_module = exec_module  # this module's own loader object: no other module sees it
        return spec

    def _spec_from_others(self, fullname, path, target):
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(fullname, path, target)
            if spec is not None:
                return spec
        return None


def _run_guarded(action, fullname: str, *args, when: str = "after importing", failed=None):
    """action(*args), or `failed` (with a one-line warning) when it raises."""
    try:
        return action(*args)
    except Exception as e:  # noqa: BLE001 - an extra of ours never breaks the user's import
        print(f"traincheck: warning: {when} {fullname}: {type(e).__name__}: {e}", file=sys.stderr)
        return failed


def _execute(execute, module, set_recording_off) -> None:
    """Runs the module's code; with `set_recording_off`, with the thread's recording off meanwhile."""
    if set_recording_off is None:
        execute(module)
        return
    was_off = set_recording_off(True)
    try:
        execute(module)
    finally:
        set_recording_off(was_off)


_finder = _PostImportFinder()


def add_hook(hook: Hook) -> None:
    """Run `hook(name)` for each later import; the action it returns runs on the executed module. The
    finder goes first on sys.meta_path once, ahead of the finders it asks."""
    _finder.hooks.append(hook)
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)


def remove_hook(hook: Hook) -> None:
    if hook in _finder.hooks:
        _finder.hooks.remove(hook)


def after_outermost_import(action: Callable[[], None]) -> None:
    """Run `action()` each time a thread's outermost hooked module has executed, after its hooks and the
    hooks of every hooked module it imported."""
    _finder.outermost_done.append(action)


def remove_after_outermost_import(action: Callable[[], None]) -> None:
    if action in _finder.outermost_done:
        _finder.outermost_done.remove(action)


def execute_quietly(test: Callable[[object], bool], set_recording_off: Callable[[bool], bool]) -> None:
    """From now on, a module whose spec passes `test` (and whose loader is one per module) runs its
    top-level code with the importing thread's recording off: `set_recording_off(True)` before, the
    previous setting it returned after. Replaces an earlier call's test."""
    _finder.quiet, _finder.set_recording_off = test, set_recording_off
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)


def stop_executing_quietly() -> None:
    _finder.quiet = _finder.set_recording_off = None


def after_import(name: str, action: Callable[[object], None]) -> None:
    """Run `action(module)` once, when the module `name` has been imported (now, if it already was)."""
    if name in sys.modules:
        action(sys.modules[name])
        return

    def hook(fullname: str):
        if fullname != name:
            return None
        remove_hook(hook)
        return action

    add_hook(hook)
