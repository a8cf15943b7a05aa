"""The cost of the post-import hook (traincheck.post_import + instrument/later_imports.py) on imports that
are not instrumented, side by side in one process.

    python bench/post_import_hook.py [--modules 400 --rounds 15]

A temporary package of --modules small modules (a function and a class each) is imported, all of it,
once per round without the hook and once with it (roots `torch`: the package is outside, the common
case), alternating which goes first; sys.modules is cleared in between, so every import runs the finders
and the module code again. Prints the median time per import of each and their ratio (median over rounds
of the per-round ratio).
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
        plain, hooked, ratios = [], [], []
        for r in range(args.rounds):
            times = {}
            for mode in (("plain", "hooked") if r % 2 == 0 else ("hooked", "plain")):
                if mode == "hooked":
                    post_import.add_hook(later.hook)
                times[mode] = import_all("benchpkg", args.modules)
                if mode == "hooked":
                    post_import.remove_hook(later.hook)
            plain.append(times["plain"])
            hooked.append(times["hooked"])
            ratios.append(times["hooked"] / times["plain"])
    print(f"per import: plain {statistics.median(plain) * 1e6:.1f} us, with the hook "
          f"{statistics.median(hooked) * 1e6:.1f} us, ratio {statistics.median(ratios):.3f} "
          f"(median of {args.rounds} rounds, {args.modules} modules)")


if __name__ == "__main__":
    main()
