"""The original's `traincheck.instrumentor.tracer`, as far as training scripts use it.

The paper's overhead workloads do ``tc_tracer.DISABLE_WRAPPER = True`` around set-up and evaluation and
``False`` for the training loop. Assigning the attribute here turns our recorder off or on at once; the
next ``start_step()``/``start_eval_step()`` (sampling) or stage change (back on) overrides it, as
``config.DISABLE_WRAPPER`` is overridden in the original. (Releases before 0.2.0 kept the flag in this
module; 0.2.0 moved it to ``traincheck.config.config``, where it works as well.)

The original's instrumentation API (``Instrumentor``, ``VarSampler``) is not offered: under
``traincheck-collect`` the script is instrumented without it.
"""

import sys
import types

from traincheck import meta_vars as _meta_vars
from traincheck.meta_vars import META_VARS

_NOT_OFFERED = ("Instrumentor", "VarSampler", "get_all_subclasses")


def get_meta_vars():
    """The meta-vars dict (deprecated in the original as well)."""
    return META_VARS


class _TracerModule(types.ModuleType):
    @property
    def DISABLE_WRAPPER(self) -> bool:  # noqa: N802 - the original's name
        return _meta_vars.is_wrapper_disabled()

    @DISABLE_WRAPPER.setter
    def DISABLE_WRAPPER(self, disabled) -> None:  # noqa: N802
        _meta_vars.set_wrapper_disabled(bool(disabled))


def __getattr__(name):
    if name in _NOT_OFFERED:
        raise AttributeError(
            f"traincheck.instrumentor.tracer.{name} is the original's instrumentation API, which this "
            "TrainCheck does not offer: run the unmodified script under traincheck-collect instead"
        )
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


sys.modules[__name__].__class__ = _TracerModule

__all__ = ["DISABLE_WRAPPER", "META_VARS", "get_meta_vars"]
