"""The original's `traincheck.developer.annotations`, with its semantics:

    annotate_stage("training")                   # the stage of later records (traincheck.annotate_stage)
    annotate_answer_start_token_ids(token_id, include_start_token=False)
        # every recorded transformers generate() call marks its output's rows with where the response
        # starts and its length (_TRAINCHECK_RESPONSE_STARTING_INDICES / _TRAINCHECK_RESPONSE_LENGTHS), so
        # that "response length <= max_new_tokens" can be learned and checked (instrument/responses.py)
"""

import traincheck.config.config as config  # noqa: F401 - the original's module names, importable from here
import traincheck.instrumentor.tracer as tracer  # noqa: F401
from traincheck.config.config import ALL_STAGE_NAMES  # noqa: F401
from traincheck.instrument.responses import set_answer_start
from traincheck.instrumentor import META_VARS  # noqa: F401
from traincheck.meta_vars import annotate_stage  # noqa: F401


def annotate_answer_start_token_ids(answer_start_token_id: int, include_start_token: bool = False) -> None:
    """Name the token that starts the answer in generated sequences (the original's signature). With
    `include_start_token` the response starts at that token, else right after it."""
    set_answer_start(answer_start_token_id, include_start_token)


__all__ = ["annotate_answer_start_token_ids", "annotate_stage"]
