"""Meta-vars (step, stage, user keys) and step sampling (docs/collection.md §Meta-vars and sampling).

Every trace record carries the meta-vars that held when its event happened. Rather than serialising a dict
per call, each *change* of the keys other than "step" (stage, user keys: rare) publishes their JSON text
to the C++ recorder, and events carry its id; the step, which changes every iteration, is one integer
store that events copy into their header. So a run of any length interns a bounded number of snapshots.
"""

from __future__ import annotations

import json
import operator
from collections.abc import MutableMapping
from typing import Any

# The analyzer lists the same names (cpp/invariant/precondition.cpp, all_stage_names);
# tests/python/test_stage_names.py ties the two lists together.
VALID_STAGES = (
    "init",
    "training",
    "evaluation",
    "inference",
    "testing",
    "checkpointing",
    "preprocessing",
    "postprocessing",
)

_meta: dict[str, Any] = {"step": 0}
_policy = {"interval": 1, "warm_up": 1}
_recorder = None  # traincheck._core once recording has started
_recording = {"on": True, "sampled_out": False}  # the original's `not config.DISABLE_WRAPPER`, kept here before a recorder exists
_step_end_hooks: list = []  # called at each iteration boundary, before the step number moves on
_steps_started = [0]  # start_step() calls


def add_step_end_hook(hook) -> None:
    _step_end_hooks.append(hook)


def attach_recorder(core, sampling_interval: int, warm_up_steps: int) -> None:
    """Called by the runtime when recording starts: later changes reach the recorder."""
    global _recorder
    _recorder = core
    _policy["interval"] = max(1, int(sampling_interval))
    _policy["warm_up"] = max(0, int(warm_up_steps))
    _changed_other_keys()  # this recorder has not seen them yet
    _publish()
    core.set_recording(_recording["on"])


_rest_json = {"text": None}  # the keys other than "step" as JSON members, serialised once per change


def _publish() -> None:
    """Hand the recorder what changed: the other keys' JSON when they changed, and the step."""
    if _recorder is None:
        return
    if _rest_json["text"] is None:
        others = {k: v for k, v in _meta.items() if k != "step"}
        _rest_json["text"] = json.dumps(others, separators=(",", ":"), default=str)[1:-1]
        _recorder.publish_meta_vars(_rest_json["text"])
    _recorder.set_step(_meta.get("step", 0))


def _changed_other_keys() -> None:
    _rest_json["text"] = None


def _set_recording(on: bool, sampled_out: bool = False) -> None:
    """`sampled_out`: recording is off only because the step is not sampled; rare calls (once per epoch,
    say) are then still recorded by the wrappers, so that sampling never drops them."""
    _recording["on"] = bool(on)
    _recording["sampled_out"] = bool(sampled_out)
    if _recorder is not None:
        _recorder.set_recording(bool(on), rare_calls=sampled_out and not on)


def is_wrapper_disabled() -> bool:
    """The original's DISABLE_WRAPPER: true while nothing is recorded (a skipped step, or the script said so)."""
    return not _recording["on"]


def set_wrapper_disabled(disabled: bool) -> None:
    """A script's own `DISABLE_WRAPPER = ...`: holds until the next start_step/start_eval_step or stage change,
    which apply the sampling policy (or turn recording back on) as in the original."""
    _set_recording(not disabled)


def is_step_sampled(step: int) -> bool:
    """The original's rule: always trace warm-up steps, then every `interval`-th step."""
    warm_up, interval = _policy["warm_up"], _policy["interval"]
    return step < warm_up or (step - warm_up) % interval == 0


def get_step() -> int:
    return _meta.get("step", 0)


def steps_started() -> int:
    """How many times start_step() ran in this process."""
    return _steps_started[0]


def get_meta_vars() -> dict[str, Any]:
    """A copy of the current meta-vars."""
    return dict(_meta)


def set_meta_var(key: str, value: Any) -> None:
    """Set a user key (for example ``_DATA_PARALLEL_RANK``) that appears in every later record."""
    if key in ("step", "stage", "eval_step"):
        raise ValueError(f"meta var {key!r} is managed by start_step/annotate_stage/start_eval_step")
    if _meta.get(key, _MISSING) is value:
        return
    _meta[key] = value
    _changed_other_keys()
    _publish()


_MISSING = object()


def annotate_stage(stage: str) -> None:
    """Mark the stage of the training program; a stage change turns recording back on."""
    if stage not in VALID_STAGES:
        raise ValueError(f"invalid stage {stage!r}; expected one of {', '.join(VALID_STAGES)}")
    if _meta.get("stage") == stage:
        return
    _meta["stage"] = stage
    _changed_other_keys()
    _publish()
    _set_recording(True)


_stage_stack: list = []  # what enter_stage saved: (stage or None, recording on, sampled out)


def enter_stage(stage: str) -> None:
    """Switch to `stage` until the matching leave_stage(), which restores the stage and the recording state
    that held before. For library code that runs a phase inside another (a Trainer evaluating in the middle
    of training): annotate_stage would leave the stage changed and recording on in a sampled-out step."""
    _stage_stack.append((_meta.get("stage"), _recording["on"], _recording["sampled_out"]))
    annotate_stage(stage)


def leave_stage() -> None:
    if not _stage_stack:
        return
    stage, on, sampled_out = _stage_stack.pop()
    if stage is not None and _meta.get("stage") != stage:
        _meta["stage"] = stage
        _changed_other_keys()
        _publish()
    _set_recording(on, sampled_out)


def is_collecting() -> bool:
    """True inside a program that traincheck-collect runs (the recorder has started)."""
    return _recorder is not None


def start_step() -> None:
    """Begin a training iteration: step 1 is the first; sampling decides whether it is recorded."""
    _steps_started[0] += 1
    _in_evaluation[0] = False
    for hook in _step_end_hooks:
        hook()
    if _meta.get("stage") != "training":
        _meta["stage"] = "training"
        _changed_other_keys()
    _meta["step"] = _meta.get("step", 0) + 1
    _publish()
    _set_recording(is_step_sampled(_meta["step"]), sampled_out=True)


def in_evaluation() -> bool:
    """Whether an evaluation iteration began since the last training iteration: the program is in an
    evaluation loop (or after one, until training goes on)."""
    return _in_evaluation[0]


_in_evaluation = [False]


def start_eval_step() -> None:
    """Begin an evaluation iteration (meta var ``eval_step``), sampled like training steps."""
    _in_evaluation[0] = True
    _meta["eval_step"] = _meta.get("eval_step", 0) + 1
    _changed_other_keys()
    _publish()
    _set_recording(is_step_sampled(_meta["eval_step"]), sampled_out=True)


class MetaVarsDict(MutableMapping):
    """The original's process-global ``META_VARS`` dict (``meta_vars`` in older releases), as scripts use it:
    ``META_VARS["step"] = i`` sets the step, any other key placed in it appears in every later record, and
    reading gives the current values. Unlike the original's plain dict, a value is recorded as it was when
    assigned: mutating a list or dict held in it later is not seen until it is assigned again."""

    def __getitem__(self, key: str) -> Any:
        return _meta[key]

    def __setitem__(self, key: str, value: Any) -> None:
        if key == "step":
            try:
                value = operator.index(value)
            except TypeError:
                raise TypeError(f"META_VARS['step'] must be an integer, got {type(value).__name__}") from None
            _meta["step"] = value
        else:  # "stage" and "eval_step" too: set as given, as the original's dict would
            _meta[key] = value
            _changed_other_keys()
        _publish()

    def __delitem__(self, key: str) -> None:
        if key == "step":
            raise KeyError("META_VARS['step'] cannot be removed; assign it instead")
        del _meta[key]
        _changed_other_keys()
        _publish()

    def __iter__(self):
        return iter(list(_meta))

    def __len__(self) -> int:
        return len(_meta)

    def __repr__(self) -> str:
        return repr(_meta)


META_VARS = MetaVarsDict()
