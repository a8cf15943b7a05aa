"""Hugging Face Transformers' `Trainer` under traincheck-collect (docs/collection.md §Training libraries).

Attached when the script imports `transformers.trainer` (traincheck.integrations' post-import hook):

- `TrainCheckCallback` joins `transformers.trainer.DEFAULT_CALLBACKS`, the callbacks every Trainer
  starts with: `on_train_begin` annotates the stage "training" and `on_step_begin` calls start_step(),
  once per optimisation step (gradient accumulation's micro-batches share one step), so
  `meta_vars.step` equals `trainer.state.global_step` once that step's update is done (1 for the first);
- `Trainer.evaluate` runs in the stage "evaluation" and `Trainer.predict` in "inference", the stage
  before restored after (evaluations in the middle of training return to "training"); each batch of
  either (`Trainer.prediction_step`) starts an eval step (`meta_vars.eval_step`);
- `Trainer.save_model` and the checkpoint `Trainer._save_checkpoint` run in "checkpointing".

The callback has no begin-of-evaluation event (only `on_evaluate`, after it), so evaluation and saving
are annotated by wrapping those Trainer methods on the class, which a subclass that overrides them and
calls `super()` keeps.
"""

from __future__ import annotations

from transformers.trainer_callback import TrainerCallback

from traincheck import meta_vars
from traincheck.integrations import before_each_call, in_stage, numbers_steps


class TrainCheckCallback(TrainerCallback):
    """Numbers the Trainer's optimisation steps; added to every Trainer under traincheck-collect."""

    def on_train_begin(self, args, state, control, **kwargs):
        meta_vars.annotate_stage("training")

    def on_step_begin(self, args, state, control, **kwargs):
        if numbers_steps():
            meta_vars.start_step()


_STAGES = {"evaluate": "evaluation", "predict": "inference", "save_model": "checkpointing",
           "_save_checkpoint": "checkpointing"}


def attach(trainer_module) -> None:
    if TrainCheckCallback not in trainer_module.DEFAULT_CALLBACKS:
        trainer_module.DEFAULT_CALLBACKS.append(TrainCheckCallback)
    trainer = trainer_module.Trainer
    for method, stage in _STAGES.items():
        if hasattr(trainer, method):
            setattr(trainer, method, in_stage(stage, getattr(trainer, method)))
    trainer.prediction_step = before_each_call(meta_vars.start_eval_step, trainer.prediction_step)
