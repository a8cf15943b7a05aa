"""The import surface of the original's `traincheck.instrumentor`, for scripts written for it.

    import traincheck.instrumentor.tracer as tc_tracer
    tc_tracer.DISABLE_WRAPPER = True           # nothing is recorded until set back to False (or until the
                                               # next start_step / stage change, as in the original)
    from traincheck.instrumentor import META_VARS   # 0.2.0; `meta_vars` in older releases: the same object
    META_VARS["step"] = i                      # sets the step of later records; other keys appear in them
    from traincheck.instrumentor.control import start_step, start_eval_step

Our own instrumentation lives in `traincheck.instrument`; this package only forwards to the meta-vars.
"""

from traincheck.instrumentor import control, tracer  # noqa: F401 - submodules the original loads with it
from traincheck.instrumentor.caches import META_VARS, meta_vars

__all__ = ["META_VARS", "meta_vars"]
