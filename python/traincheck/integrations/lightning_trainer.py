"""Lightning's `Trainer` under traincheck-collect (docs/collection.md §Training libraries).

Lightning adds the callbacks that entry points of the group `lightning.pytorch.callbacks_factory`
(`pytorch_lightning.callbacks_factory` for the older package name) return to every Trainer it creates;
pyproject.toml registers the factories below. They return nothing outside traincheck-collect, so
installing traincheck changes no other Lightning run. The callback:

- `on_train_start`: the stage "training"; `on_train_batch_start`: start_step(), once per training
  batch (with `accumulate_grad_batches=N`, N steps per optimizer update), so `meta_vars.step` equals
  `trainer.global_step` after the batch's update (1 for the first);
- validation (the sanity check too), test and predict run in the stages "evaluation", "testing" and
  "inference", each batch starting an eval step; the stage before is restored when they end.

Checkpoint saving is not annotated: Lightning has no event around it (`on_save_checkpoint` comes before
the write and has no end).
"""

from __future__ import annotations

from traincheck import meta_vars
from traincheck.integrations import numbers_steps

_classes: dict = {}  # Lightning's Callback base class -> our subclass of it


def _callback_class(base):
    """Our callback, subclassing `base` (lightning.pytorch's or pytorch_lightning's Callback)."""
    if base in _classes:
        return _classes[base]

    def enter(stage):
        return lambda self, trainer, pl_module: meta_vars.enter_stage(stage)

    def leave(self, trainer, pl_module):
        meta_vars.leave_stage()

    def eval_step(self, trainer, pl_module, batch, batch_idx, dataloader_idx=0):
        meta_vars.start_eval_step()

    def on_train_start(self, trainer, pl_module):
        meta_vars.annotate_stage("training")

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        if numbers_steps():
            meta_vars.start_step()

    members = {"__doc__": "Numbers Lightning's training steps and annotates its stages (traincheck-collect).",
               "on_train_start": on_train_start, "on_train_batch_start": on_train_batch_start}
    for phase, stage in (("validation", "evaluation"), ("test", "testing"), ("predict", "inference")):
        members[f"on_{phase}_start"] = enter(stage)
        members[f"on_{phase}_end"] = leave
        members[f"on_{phase}_batch_start"] = eval_step
    cls = _classes[base] = type("TrainCheckCallback", (base,), members)
    return cls


def lightning_callbacks() -> list:
    """Entry point `lightning.pytorch.callbacks_factory`."""
    if not meta_vars.is_collecting():
        return []
    from lightning.pytorch.callbacks import Callback

    return [_callback_class(Callback)()]


def pytorch_lightning_callbacks() -> list:
    """Entry point `pytorch_lightning.callbacks_factory`."""
    if not meta_vars.is_collecting():
        return []
    from pytorch_lightning.callbacks import Callback

    return [_callback_class(Callback)()]
