"""Names of the original TrainCheck 0.2.0 that this one does not offer, and the message importing one gives
(docs/differences.md §Script API). `from traincheck import Instrumentor` raises ImportError with this
message rather than Python's bare "cannot import name"."""

from __future__ import annotations

# The original's own instrumentation API: under traincheck-collect the script is instrumented without it.
INSTRUMENTATION_API = frozenset({"Instrumentor", "VarSampler"})


def not_offered(module: str, name: str) -> ImportError:
    if name in INSTRUMENTATION_API:
        why = ("is the original's instrumentation API, which this TrainCheck does not offer: run the unmodified "
               "script under traincheck-collect instead (-t for the modules to instrument, --models-to-track "
               "for models)")
    else:
        why = "is part of the original's recorder internals, which this TrainCheck does not offer"
    return ImportError(f"{module}.{name} {why} (see docs/differences.md, Script API)", name=name)


def module_getattr(module: str, names: frozenset):
    """A module __getattr__ raising the clear message for `names`, AttributeError for anything else."""

    def __getattr__(name):
        if name in names:
            raise not_offered(module, name)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__
