"""The original's step controls (`from traincheck.instrumentor.control import start_step`): the same
functions as `traincheck.start_step` / `traincheck.start_eval_step`."""

from traincheck.meta_vars import start_eval_step, start_step

__all__ = ["start_eval_step", "start_step"]
