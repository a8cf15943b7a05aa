"""The original's step controls (`from traincheck.instrumentor.control import start_step`): the same
functions as `traincheck.start_step` / `traincheck.start_eval_step`, and the names the original's module
imports (`META_VARS`, `annotate_stage`, `config`)."""

import traincheck.config.config as config  # noqa: F401
from traincheck.meta_vars import META_VARS, annotate_stage, start_eval_step, start_step

__all__ = ["META_VARS", "annotate_stage", "config", "start_eval_step", "start_step"]
