"""The original's `traincheck.instrumentor.tracer`, as far as training scripts use it.

The paper's overhead workloads do ``tc_tracer.DISABLE_WRAPPER = True`` around set-up and evaluation and
``False`` for the training loop. Assigning the attribute here turns our recorder off or on at once; the
next ``start_step()``/``start_eval_step()`` (sampling) or stage change (back on) overrides it, as
``config.DISABLE_WRAPPER`` is overridden in the original. (Releases before 0.2.0 kept the flag in this
module; 0.2.0 moved it to ``traincheck.config.config``, where it works as well.)

Also offered, with the original's meaning: ``suppress_tracing`` (a context manager and decorator: nothing
the current thread calls inside it is recorded), ``application_tracing`` (recording back on inside a
suppressed scope), ``tracing_suppressed()``, ``get_all_subclasses(cls)``, ``TraceLineType``,
``GENERATE_START_TOKEN_ID`` / ``GENERATE_START_TOKEN_ID_INCLUDE_START_TOKEN`` (what
``annotate_answer_start_token_ids`` sets) and ``get_meta_vars()``.

The original's instrumentation API (``Instrumentor``, ``VarSampler``) and its recorder internals are not
offered: importing one raises ImportError saying so (traincheck.not_offered).
"""

import os
import sys
import threading
import types
from contextlib import ContextDecorator

import traincheck.config.config as config  # noqa: F401 - the original's tracer imports it under this name
from traincheck import meta_vars as _meta_vars
from traincheck.instrument import responses as _responses
from traincheck.meta_vars import META_VARS
from traincheck.not_offered import INSTRUMENTATION_API, module_getattr

# Names the original's tracer exports (0.2.0) that belong to its own recorder.
_INTERNALS = frozenset({
    "METRIC_INSTRUMENTED_FUNC_LIST", "IS_INSTRUMENTING", "THREAD_DATA", "get_process_thread_id",
    "is_c_level_function", "get_owner_class", "to_dict_args_kwargs", "to_dict_return_value",
    "function_wrapper", "core_wrapper_proxy", "wrapper", "log_instrumentation_progress",
    "modules_or_cls_id_instrumented", "mark_module_or_cls_as_visited", "is_module_or_cls_instrumented",
    "is_API_instrumented", "is_API_bound_method", "get_module_path_from_file_path", "convert_var_to_dict",
    "dump_trace_API", "dump_trace_VAR", "get_instrumentation_logger_for_process", "var_to_serializable",
    "is_proxied", "is_proxyparameter", "unproxy_args_kwargs", "get_global_registry", "funcs_to_be_replaced",
    "is_funcs_to_be_unproxied", "preserve_torchscript_builtin", "warn_unsupported_torchscript",
    "get_timestamp_ns", "get_unique_id", "typename", "INSTR_MODULES_TO_SKIP", "SKIP_INSTR_APIS",
    "WRAP_WITHOUT_DUMP", "WRAP_WITHOUT_DUMP_WHITELIST",
})
NOT_OFFERED = INSTRUMENTATION_API | _INTERNALS

COLLECT_OVERHEAD_METRICS = os.environ.get("COLLECT_OVERHEAD_METRICS", "0") == "1"


class TraceLineType:
    FUNC_CALL_PRE = "function_call (pre)"
    FUNC_CALL_POST = "function_call (post)"
    FUNC_CALL_POST_EXCEPTION = "function_call (post) (exception)"
    STATE_CHANGE = "state_change"


def get_meta_vars():
    """The meta-vars dict (deprecated in the original as well)."""
    return META_VARS


def get_all_subclasses(cls) -> set:
    """Every direct and indirect subclass of `cls` (the original's helper)."""
    found = []

    def recurse(c):
        for sub in c.__subclasses__():
            found.append(sub)
            recurse(sub)

    recurse(cls)
    return set(found)


class _Suppression(threading.local):
    def __init__(self) -> None:
        self.depth = 0


_suppression = _Suppression()


def _set_thread_recording_off(off: bool):
    """This thread's recording off or back on; returns what it was (None outside traincheck-collect)."""
    core = _meta_vars._recorder
    return core.set_inside_recorder(off) if core is not None else None


class suppress_tracing(ContextDecorator):
    """Nothing the current thread calls inside is recorded (other threads go on); nests, and is
    exception-safe, as the original's."""

    def _recreate_cm(self):
        return type(self)()

    def __enter__(self):
        self._depth = _suppression.depth
        _suppression.depth = self._depth + 1
        self._was = _set_thread_recording_off(True)
        return self

    def __exit__(self, exc_type, exc, tb):
        _suppression.depth = self._depth
        if self._was is not None:
            _set_thread_recording_off(self._was)
        return False


class application_tracing(suppress_tracing):
    """Recording back on for the current thread inside a suppressed scope (the original's use: advancing a
    user-supplied generator)."""

    def __enter__(self):
        self._depth = _suppression.depth
        _suppression.depth = 0
        self._was = _set_thread_recording_off(False)
        return self


def tracing_suppressed() -> bool:
    return _suppression.depth > 0


class _TracerModule(types.ModuleType):
    @property
    def DISABLE_WRAPPER(self) -> bool:  # noqa: N802 - the original's name
        return _meta_vars.is_wrapper_disabled()

    @DISABLE_WRAPPER.setter
    def DISABLE_WRAPPER(self, disabled) -> None:  # noqa: N802
        _meta_vars.set_wrapper_disabled(bool(disabled))

    @property
    def GENERATE_START_TOKEN_ID(self):  # noqa: N802
        return _responses.state["token_id"]

    @GENERATE_START_TOKEN_ID.setter
    def GENERATE_START_TOKEN_ID(self, token_id) -> None:  # noqa: N802
        _responses.state["token_id"] = token_id

    @property
    def GENERATE_START_TOKEN_ID_INCLUDE_START_TOKEN(self) -> bool:  # noqa: N802
        return _responses.state["include_start_token"]

    @GENERATE_START_TOKEN_ID_INCLUDE_START_TOKEN.setter
    def GENERATE_START_TOKEN_ID_INCLUDE_START_TOKEN(self, include) -> None:  # noqa: N802
        _responses.state["include_start_token"] = bool(include)


__getattr__ = module_getattr(__name__, NOT_OFFERED)

sys.modules[__name__].__class__ = _TracerModule

__all__ = ["COLLECT_OVERHEAD_METRICS", "DISABLE_WRAPPER", "GENERATE_START_TOKEN_ID",
           "GENERATE_START_TOKEN_ID_INCLUDE_START_TOKEN", "META_VARS", "TraceLineType", "application_tracing",
           "config", "get_all_subclasses", "get_meta_vars", "suppress_tracing", "tracing_suppressed"]
