"""A fused optimizer's step is seen: `fused=True` updates the parameters in one kernel that leaves their
version counters alone, so the tracker's signature (version, data address) did not change and the old data
digest was written at every step. transformers' Trainer defaults to fused AdamW: a Trainer program's
parameters looked frozen in the trace, and two DDP ranks whose weights drifted apart looked equal."""

import pytest
import torch

from test_tracker_new_gradient import RecordingCore
from traincheck.tracking.tracker import ModelTracker


def _step_digests(fused: bool) -> list:
    core = RecordingCore()
    tracker = ModelTracker(core, style="sampler")
    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.1, fused=fused)
    tracker.track(model, "model")
    weight = core.names["model.weight"]
    digests = []
    for _ in range(3):
        model(torch.ones(1, 3)).sum().backward()
        optimizer.step()
        tracker.after_optimizer_step(optimizer, (), {})  # as torch's global step hook calls it
        optimizer.zero_grad()
        digests.append([d for n, d in core.data_digests if n == weight][-1])
    return digests


@pytest.mark.parametrize("fused", [False, True])
def test_every_step_of_an_optimizer_fused_or_not_writes_the_new_weights(fused):
    digests = _step_digests(fused)
    assert len(set(digests)) == 3, digests  # each step changed the weights, and each record says so

