"""Nothing is recorded while a library module imported after collection starts runs its top-level code
(docs/collection.md §Determinism).

Modules imported before collection starts (torch itself, the instrumented packages) run their set-up
unrecorded: nothing is wrapped yet. Those imported later, lazily (torch._dynamo at the first optimizer,
transformers' models at first use, torch.distributed's submodules), ran theirs with the wrappers in place:
`torch.distributed.is_available`, `register_fake`, `getArtifactLogger` and the like were recorded inside
whichever call happened to import them first. Which call that is follows import order, not training: it
differs between programs that train the same way, and between runs when a thread of ours or of a
library imports the module first. Orderings learned from such calls ("`is_available` precedes
`SGD.step`") flagged correct programs and made verdicts change between runs.

A library module is one whose file lies in the interpreter's library or site-packages folders, or in the
folder of an instrumented package. A module of the user's own (the script's folder, a source checkout)
runs recorded as before: its top-level calls are the program's.
"""

from __future__ import annotations

import os
import site
import sys
import sysconfig

from traincheck import post_import


def pause_recording_in_library_imports(core, roots: list[str]) -> None:
    folders = library_folders(roots)
    known: dict[str, bool] = {}  # a module's folder -> whether it is a library's

    def is_library_module(spec) -> bool:
        origin = getattr(spec, "origin", None)
        if not isinstance(origin, str):
            return False
        folder = os.path.dirname(origin)
        inside = known.get(folder)
        if inside is None:
            real = os.path.join(os.path.realpath(folder), "")
            inside = known[folder] = real.startswith(folders)
        return inside

    post_import.execute_quietly(is_library_module, core.set_inside_recorder)


def library_folders(roots: list[str]) -> tuple[str, ...]:
    """The interpreter's standard library and site-packages folders and the folders of the instrumented
    packages (an editable install lives elsewhere), resolved, each ending in a separator."""
    paths = sysconfig.get_paths()
    folders = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths}
    folders.update(getattr(site, "getsitepackages", lambda: [])())
    if site.ENABLE_USER_SITE and site.getusersitepackages():
        folders.add(site.getusersitepackages())
    for root in roots:
        package = sys.modules.get(root.partition(".")[0])
        folders.update(getattr(package, "__path__", None) or [])
    return tuple(sorted({os.path.join(os.path.realpath(f), "") for f in folders if f}))
