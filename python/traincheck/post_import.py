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
"""

from __future__ import annotations

import sys
import threading
from typing import Callable, Optional

# A hook: given a module name about to be imported, the action to run on the executed module, or None.
Hook = Callable[[str], Optional[Callable[[object], None]]]


class _PostImportFinder:
    def __init__(self):
        self.hooks: list[Hook] = []
        self._searching = threading.local()  # names this thread is finding a spec for (re-entrancy)
        self._executing = threading.local()  # how many hooked modules this thread is executing (nesting)
        self.outermost_done: list[Callable[[], None]] = []

    def _actions(self, fullname: str) -> list:
        actions = []
        for hook in list(self.hooks):
            action = hook(fullname)
            if action is not None:
                actions.append(action)
        return actions

    def find_spec(self, fullname, path, target=None):
        actions = self._actions(fullname)
        if not actions:
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

        def exec_module(module):
            depth = getattr(self._executing, "depth", 0)
            self._executing.depth = depth + 1
            try:
                try:
                    execute(module)
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


def _run_guarded(action, fullname: str, *args) -> None:
    try:
        action(*args)
    except Exception as e:  # noqa: BLE001 - an extra of ours never breaks the user's import
        print(f"traincheck: warning: after importing {fullname}: {type(e).__name__}: {e}", file=sys.stderr)


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
