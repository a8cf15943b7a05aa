"""Step and stage annotations for training loops that live in a library, not in the user's script
(docs/collection.md §Training libraries).

The source rewrite numbers steps in the script's own loops; a `Trainer` of Hugging Face Transformers or
Lightning runs its loop inside the library, where the rewrite never looks. Under traincheck-collect these
integrations annotate such a loop through the library's own extension points, so steps and stages mean
what they mean in a hand-written loop:

- transformers (transformers_trainer.py): a TrainerCallback added to every Trainer when
  `transformers.trainer` is imported (traincheck.post_import);
- Lightning (lightning_trainer.py): a Callback that Lightning adds to every Trainer through its
  documented `callbacks_factory` entry points (pyproject.toml); it is empty outside traincheck-collect.

A script that calls `start_step()` itself keeps numbering its steps: the integrations then annotate
stages only, so no iteration counts twice.
"""

from __future__ import annotations

import functools
import sys

from traincheck import meta_vars, post_import

_state = {"number_steps": True}

# Module whose import attaches an integration -> "module:function" that attaches it (given the module).
_POST_IMPORT = {"transformers.trainer": "traincheck.integrations.transformers_trainer:attach"}


def numbers_steps() -> bool:
    """Whether the integrations call start_step(): not when the script does so itself."""
    return _state["number_steps"] and meta_vars.is_collecting()


def install(script_numbers_steps: bool) -> None:
    """Called by the runtime before the user's script runs."""
    _state["number_steps"] = not script_numbers_steps
    for name, target in _POST_IMPORT.items():  # now for a module imported before us (not by the script)
        post_import.after_import(name, functools.partial(_attach, name, target))


def _attach(name: str, target: str, module) -> None:
    try:
        module_name, function = target.split(":")
        getattr(__import__(module_name, fromlist=[function]), function)(module)
    except Exception as e:  # noqa: BLE001 - annotations are an extra: never break the user's program
        print(f"traincheck: warning: no step/stage annotations for {name} ({type(e).__name__}: {e})",
              file=sys.stderr)


def in_stage(stage: str, function):
    """`function` (a library method) wrapped so that it runs in `stage`, the stage before it restored after."""
    if getattr(function, "__traincheck_stage__", None) is not None:
        return function

    @functools.wraps(function)
    def run_in_stage(*args, **kwargs):
        meta_vars.enter_stage(stage)
        try:
            return function(*args, **kwargs)
        finally:
            meta_vars.leave_stage()

    run_in_stage.__traincheck_stage__ = stage
    return run_in_stage


def before_each_call(action, function):
    """`function` wrapped so that `action()` runs before each call (an evaluation batch's start_eval_step)."""
    if getattr(function, "__traincheck_before__", None) is not None:
        return function

    @functools.wraps(function)
    def run_after_action(*args, **kwargs):
        action()
        return function(*args, **kwargs)

    run_after_action.__traincheck_before__ = action
    return run_after_action
