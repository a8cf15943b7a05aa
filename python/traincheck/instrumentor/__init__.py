"""The import surface of the original's `traincheck.instrumentor`, for scripts written for it.

    import traincheck.instrumentor.tracer as tc_tracer
    tc_tracer.DISABLE_WRAPPER = True           # nothing is recorded until set back to False (or until the
                                               # next start_step / stage change, as in the original)
    from traincheck.instrumentor import META_VARS   # 0.2.0; `meta_vars` in older releases: the same object
    META_VARS["step"] = i                      # sets the step of later records; other keys appear in them
    from traincheck.instrumentor.control import start_step, start_eval_step
    from traincheck.instrumentor import suppress_tracing, get_all_subclasses   # see tracer.py

Our own instrumentation lives in `traincheck.instrument`; this package only forwards to the meta-vars and
the recorder. The original's instrumentation API (`Instrumentor`, `VarSampler`) and the internals of its
source rewriter and recorder, which its star imports exported too, raise ImportError saying so.
"""

from traincheck.instrumentor import control, tracer  # noqa: F401 - submodules the original loads with it
from traincheck.instrumentor.caches import META_VARS, meta_vars
from traincheck.instrumentor.tracer import (  # noqa: F401
    COLLECT_OVERHEAD_METRICS,
    TraceLineType,
    application_tracing,
    config,
    get_all_subclasses,
    get_meta_vars,
    suppress_tracing,
    tracing_suppressed,
)
from traincheck.not_offered import not_offered

# What the original's `from .source_file import *` exported: its source rewriter, which ours replaces
# (traincheck.source_rewrite). Its `annotate_stage` rewrites source text; the stage annotation is
# traincheck.annotate_stage.
_SOURCE_REWRITER = frozenset({
    "get_code_head_and_tail", "InsertTracerVisitor", "instrument_library", "instrument_model_once",
    "get_child_parent_map", "instrument_all_model_assignments", "instrument_model_tracker_proxy",
    "instrument_model_tracker_sampler", "annotate_stage", "instrument_file", "INSTR_MODULES_TO_INSTR",
})


def __getattr__(name):
    if name in ("GENERATE_START_TOKEN_ID", "GENERATE_START_TOKEN_ID_INCLUDE_START_TOKEN"):
        return getattr(tracer, name)  # the live value (the original's star import copied it once)
    if name in _SOURCE_REWRITER or name in tracer.NOT_OFFERED:
        raise not_offered(__name__, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["META_VARS", "TraceLineType", "application_tracing", "get_all_subclasses", "get_meta_vars",
           "meta_vars", "suppress_tracing", "tracing_suppressed"]
