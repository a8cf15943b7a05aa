"""TrainCheck with a C++ engine: learn training invariants from good runs, check new runs against them.

Public annotations for training scripts (they are no-ops unless the script runs under
``traincheck-collect``, apart from keeping the meta-vars dict):

    traincheck.annotate_stage("training")   # or "init", "testing", "checkpointing", ...
    traincheck.start_step()                 # at the top of each training iteration
    traincheck.start_eval_step()            # at the top of each evaluation iteration
    traincheck.set_meta_var("_DATA_PARALLEL_RANK", rank)
    traincheck.annotate_answer_start_token_ids(token_id)   # generate() responses start after this token
    traincheck.on_violation(callback)       # ours: called at the step boundary after a violation (collect -i)

Every name the original TrainCheck 0.2.0 exports from `traincheck`, `traincheck.developer` and
`traincheck.instrumentor` that a training script uses is here with its meaning (docs/differences.md
§Script API); importing one that is not offered (`Instrumentor`) raises ImportError saying so.
"""

from traincheck.meta_vars import (
    annotate_stage,
    get_meta_vars,
    set_meta_var,
    start_eval_step,
    start_step,
)

# The original's import surface for scripts written for it (`traincheck.instrumentor.tracer.DISABLE_WRAPPER`,
# `traincheck.config.config`, `traincheck.instrumentor.META_VARS`, `traincheck.developer.annotations`):
# light modules, no torch.
from traincheck import config, developer, instrumentor  # noqa: E402,F401
from traincheck.developer.annotations import annotate_answer_start_token_ids  # noqa: E402
from traincheck.instrumentor.tracer import get_all_subclasses  # noqa: E402
from traincheck.not_offered import INSTRUMENTATION_API, module_getattr  # noqa: E402
from traincheck.violations import Violation, ViolationError, on_violation  # noqa: E402

__getattr__ = module_getattr(__name__, INSTRUMENTATION_API)

__all__ = ["Violation", "ViolationError", "annotate_answer_start_token_ids", "annotate_stage", "get_all_subclasses",
           "get_meta_vars", "on_violation", "set_meta_var", "start_eval_step", "start_step"]
__version__ = "0.2.0"
