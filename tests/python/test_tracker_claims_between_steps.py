"""The tracker's claims of what ran between two optimizer steps, judged directly (no collector): which passes
of a DistributedSampler are compared, and which validation forwards make a claim."""

import pytest
import torch
from torch.utils.data.distributed import DistributedSampler

from test_tracker_new_gradient import RecordingCore
from traincheck import meta_vars
from traincheck.tracking.tracker import ModelTracker


@pytest.fixture(autouse=True)
def _own_meta_vars(monkeypatch):
    """The steps these tests start are theirs: the process's meta-vars are put back after each (a later test's
    tracker would otherwise find itself at a step it never saw)."""
    monkeypatch.setattr(meta_vars, "_meta", {"step": 0})
    monkeypatch.setattr(meta_vars, "_in_evaluation", [False])
    monkeypatch.setattr(meta_vars, "_steps_started", [0])
    monkeypatch.setattr(meta_vars, "_rest_json", {"text": None})


def _claims_of(core: RecordingCore, name: str) -> list:
    """Per dump written at an optimizer step, the values of claim `name` it made (None: not made)."""
    return [sorted({v for v in (claims.get(name) or []) if v is not None}) or None for claims in core.claims if claims]


def _step(tracker, model, optimizer):
    optimizer.zero_grad()
    model(torch.ones(4, 3)).sum().backward()
    optimizer.step()
    tracker.after_optimizer_step(optimizer, (), {})


def _tracked(model):
    core = RecordingCore()
    tracker = ModelTracker(core, style="sampler")
    tracker.track(model, "model")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    tracker.optimizer_built(optimizer)
    return core, tracker, optimizer


def test_a_pass_no_step_follows_is_never_compared_and_two_trained_passes_of_one_epoch_are():
    model = torch.nn.Linear(3, 1)
    core, tracker, optimizer = _tracked(model)
    sampler = DistributedSampler(range(8), num_replicas=1, rank=0, shuffle=True)
    tracker.sampler_iterated(sampler)  # a peek at one batch before training, epoch 0
    for epoch in range(2):
        sampler.set_epoch(epoch)
        tracker.sampler_iterated(sampler)
        _step(tracker, model, optimizer)
        tracker.sampler_iterated(sampler)  # the training set's accuracy after the epoch: no step follows
    assert _claims_of(core, "sampler_epoch_advanced") == [None, [True]]
    tracker.sampler_iterated(sampler)  # the next epoch without set_epoch
    _step(tracker, model, optimizer)
    assert _claims_of(core, "sampler_epoch_advanced")[-1] == [False]


def test_validation_in_training_mode_is_claimed_only_for_a_model_whose_mode_changes_what_it_computes():
    for model, expected in ((torch.nn.Linear(3, 1), None),
                            (torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Dropout(0.2)), [False])):
        core, tracker, optimizer = _tracked(model)
        _step(tracker, model, optimizer)
        meta_vars.start_eval_step()
        with torch.no_grad():
            model(torch.ones(2, 3))  # model.eval() forgotten
        meta_vars.start_step()
        _step(tracker, model, optimizer)
        assert _claims_of(core, "eval_in_validation")[-1] == expected


class _FunctionalDropoutNet(torch.nn.Module):
    """Dropout in the functional form, with its `training` flag given or left to its default (True)."""

    def __init__(self, training_flag: str):
        super().__init__()
        self.fc = torch.nn.Linear(3, 1)
        self.training_flag = training_flag

    def forward(self, x):
        x = self.fc(x)
        F = torch.nn.functional
        if self.training_flag == "default":
            return F.dropout(x, 0.5)
        if self.training_flag == "explicit True":  # dropout kept on at evaluation on purpose (MC dropout)
            return F.dropout(x, 0.5, True)
        return F.dropout(x, 0.5, training=self.training)


@pytest.fixture
def watched_dropout(monkeypatch):
    """torch.nn.functional's dropouts watched for the tracker of the test (undone after it)."""
    from traincheck.tracking import tracker as tracker_module

    for name in tracker_module._DROPOUTS:
        if hasattr(torch.nn.functional, name):
            monkeypatch.setattr(torch.nn.functional, name, getattr(torch.nn.functional, name))
    return tracker_module.watch_functional_dropout


# The model holds no dropout layer: only a default flag makes a claim (its forwards are otherwise alike in
# either mode).
@pytest.mark.parametrize("training_flag, expected", [("default", [False]), ("self.training", None),
                                                     ("explicit True", None)])
def test_a_functional_dropout_left_to_its_default_in_an_eval_mode_forward_is_validation_in_training_mode(
        watched_dropout, training_flag, expected):
    model = _FunctionalDropoutNet(training_flag)
    core, tracker, optimizer = _tracked(model)
    watched_dropout(tracker)
    _step(tracker, model, optimizer)  # training forwards with the default: what was meant
    model.eval()
    meta_vars.start_eval_step()
    with torch.no_grad():
        model(torch.ones(2, 3))
    meta_vars.start_step()
    model.train()
    _step(tracker, model, optimizer)
    assert _claims_of(core, "eval_in_validation")[-1] == expected


def test_a_watched_functional_dropout_computes_as_torch_s_own(watched_dropout):
    original = torch.nn.functional.dropout
    watched_dropout(ModelTracker(RecordingCore(), style="sampler"))
    assert torch.nn.functional.dropout is not original and torch.nn.functional.dropout.__name__ == "dropout"
    x = torch.ones(64, 8)
    for kwargs in ({}, {"p": 0.25}, {"p": 0.25, "training": False}, {"training": True, "inplace": False}):
        torch.manual_seed(3)
        expected = original(x, **kwargs)
        torch.manual_seed(3)
        assert torch.equal(torch.nn.functional.dropout(x, **kwargs), expected)
    with pytest.raises(ValueError, match="between 0 and 1"):
        torch.nn.functional.dropout(x, 1.5)


def test_validation_after_the_last_step_is_claimed_at_the_end_of_the_run():
    model = torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Dropout(0.2))
    core, tracker, optimizer = _tracked(model)
    for _ in range(2):
        _step(tracker, model, optimizer)
    meta_vars.start_eval_step()
    with torch.no_grad():
        model(torch.ones(2, 3))  # the final evaluation, model.eval() forgotten
    tracker.at_exit()
    assert _claims_of(core, "eval_in_validation")[-1] == [False]
    assert tracker._eval_forwards == {}
