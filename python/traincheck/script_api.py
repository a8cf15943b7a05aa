"""What the annotated user script calls (as `__traincheck__.<name>`): step and stage annotations, and
model tracking, inserted by traincheck.source_rewrite."""

from traincheck.meta_vars import annotate_stage, start_eval_step, start_step

_tracker = None  # set by the runtime when --models-to-track is given


def set_tracker(tracker) -> None:
    global _tracker
    _tracker = tracker


def track_model(obj, name: str):
    """Called after each assignment to a tracked name; returns the object unchanged."""
    if _tracker is not None:
        _tracker.track(obj, name)
    return obj


__all__ = ["annotate_stage", "start_eval_step", "start_step", "track_model", "set_tracker"]
