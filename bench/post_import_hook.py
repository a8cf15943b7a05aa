"""The cost of the post-import hook (traincheck.post_import + instrument/later_imports.py +
instrument/quiet_imports.py) on imports that are not instrumented, side by side in one process.

    python bench/post_import_hook.py [--modules 400 --rounds 15]

A temporary package of --modules small modules (a function and a class each) is imported, all of it,
once per round in each mode, in a rotating order: `plain` (no hook), `hooked` (the hooks collect
installs, roots `torch`: the package is outside them, the common case) and `quiet` (the package counted
as a library's, so each module runs with recording off). sys.modules is cleared in between, so every
import runs the finders and the module code again. Prints the median time per import of each and the
ratios to plain (median over rounds of the per-round ratio).
"""
from __future__ import annotations

import argparse
import importlib
import statistics
import sys
import tempfile
import time
from pathlib import Path

from traincheck import post_import  # the installed package (pip install .)
from traincheck.instrument.installer import InstallReport
from traincheck.instrument.later_imports import LaterImports
from traincheck.instrument.quiet_imports import pause_recording_in_library_imports

MODES = ("plain", "hooked", "quiet")


class RecordingSwitch:
    """Stands for the recorder's per-thread switch (_core.set_inside_recorder)."""

    def __init__(self):
        self.off = False

    def set_inside_recorder(self, off: bool) -> bool:
        previous, self.off = self.off, off
        return previous


MODULE = "def f(x):\n    return x + 1\n\n\nclass C:\n    def m(self):\n        return 1\n"


def import_all(package: str, n: int) -> float:
    for name in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
        del sys.modules[name]
    importlib.invalidate_caches()
    start = time.perf_counter()
    importlib.import_module(package)
    for i in range(n):
        importlib.import_module(f"{package}.m{i}")
    return (time.perf_counter() - start) / (n + 1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--modules", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        pkg = Path(tmp) / "benchpkg"
        pkg.mkdir()
        (pkg / "__init__.py").write_text("")
        for i in range(args.modules):
            (pkg / f"m{i}.py").write_text(MODULE)
        sys.path.insert(0, tmp)
        later = LaterImports(["torch"], False, lambda f: False, False, lambda name: None, InstallReport())
        import_all("benchpkg", args.modules)  # compile the .pyc files once
        times = {mode: [] for mode in MODES}
        ratios = {mode: [] for mode in MODES[1:]}
        for r in range(args.rounds):
            this_round = {}
            for mode in MODES[r % 3:] + MODES[:r % 3]:
                if mode != "plain":
                    post_import.add_hook(later.hook)
                    # roots name the library folders: benchpkg's own folder makes its modules library ones
                    pause_recording_in_library_imports(RecordingSwitch(), ["torch"] if mode == "hooked" else ["benchpkg"])
                this_round[mode] = import_all("benchpkg", args.modules)
                post_import.remove_hook(later.hook)
                post_import.stop_executing_quietly()
                times[mode].append(this_round[mode])
            for mode in MODES[1:]:
                ratios[mode].append(this_round[mode] / this_round["plain"])
    median_us = {mode: statistics.median(t) * 1e6 for mode, t in times.items()}
    print(f"per import: plain {median_us['plain']:.1f} us, with the hooks {median_us['hooked']:.1f} us "
          f"(ratio {statistics.median(ratios['hooked']):.3f}), run quietly {median_us['quiet']:.1f} us "
          f"(ratio {statistics.median(ratios['quiet']):.3f}); median of {args.rounds} rounds, {args.modules} modules")


if __name__ == "__main__":
    main()
