"""`annotate_answer_start_token_ids` (the original's developer annotation for generation invariants).

Once a script has named the token that starts an answer, every recorded call of a transformers
`generate` marks its returned token tensor with `_TRAINCHECK_RESPONSE_STARTING_INDICES` and
`_TRAINCHECK_RESPONSE_LENGTHS`, per row: where the response starts (after the start token, or at it
with `include_start_token`) and how many tokens it has (0 when the token is absent). The recorder writes
a tensor's `_TRAINCHECK_*` attributes into its record, so the Threshold relation can learn "response
length <= max_new_tokens".

Differences from the original (docs/differences.md): it matches `transformers.models.*.generate` only, so
models that inherit `GenerationMixin.generate` (most of them in recent transformers) were never marked;
ours marks every transformers API named `...generate`. A start token found several times in a row raised
ValueError in the user's program; ours takes the last one (the script's result is never changed), and
prints nothing.
"""

from __future__ import annotations

import functools

# The original's tracer.GENERATE_START_TOKEN_ID and GENERATE_START_TOKEN_ID_INCLUDE_START_TOKEN.
state = {"token_id": None, "include_start_token": False}


def set_answer_start(token_id, include_start_token: bool = False) -> None:
    state["token_id"] = token_id
    state["include_start_token"] = bool(include_start_token)


def marks_responses(api_name: str) -> bool:
    return api_name.startswith("transformers.") and api_name.endswith(".generate")


def marking_responses(original):
    """`original` (a generate function) made to mark its result while an answer start token is set."""

    @functools.wraps(original)
    def generate(*args, **kwargs):
        result = original(*args, **kwargs)
        if state["token_id"] is not None:
            _mark(result, state["token_id"], state["include_start_token"])
        return result

    return generate


def _mark(result, token_id, include_start_token: bool) -> None:
    import torch

    from traincheck import _core

    if not isinstance(result, torch.Tensor) or result.dim() != 2:
        return
    was_inside = _core.set_inside_recorder(True)  # our own tensor calls are not the program's
    try:
        starts, lengths = [], []
        for row in result:
            found = (row == token_id).nonzero(as_tuple=True)[0].tolist()
            if not found:
                starts.append(-1)
                lengths.append(0)
                continue
            start = found[-1] if include_start_token else found[-1] + 1
            starts.append(start)
            lengths.append(int(row.shape[0]) - start)
        result._TRAINCHECK_RESPONSE_STARTING_INDICES = starts
        result._TRAINCHECK_RESPONSE_LENGTHS = lengths
    except Exception:  # noqa: BLE001 - a mark we could not make is left out; the program goes on
        pass
    finally:
        _core.set_inside_recorder(was_inside)
