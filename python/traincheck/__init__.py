"""TrainCheck with a C++ engine: learn training invariants from good runs, check new runs against them.

Public annotations for training scripts (they are no-ops unless the script runs under
``traincheck-collect``, apart from keeping the meta-vars dict):

    traincheck.annotate_stage("training")   # or "init", "testing", "checkpointing", ...
    traincheck.start_step()                 # at the top of each training iteration
    traincheck.start_eval_step()            # at the top of each evaluation iteration
    traincheck.set_meta_var("_DATA_PARALLEL_RANK", rank)
"""

from traincheck.meta_vars import (
    annotate_stage,
    get_meta_vars,
    set_meta_var,
    start_eval_step,
    start_step,
)

# The original's import surface for scripts written for it (`traincheck.instrumentor.tracer.DISABLE_WRAPPER`,
# `traincheck.config.config`, `traincheck.instrumentor.META_VARS`): light modules, no torch.
from traincheck import config, instrumentor  # noqa: E402,F401

__all__ = ["annotate_stage", "get_meta_vars", "set_meta_var", "start_eval_step", "start_step"]
__version__ = "0.2.0"
