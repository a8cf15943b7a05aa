"""The tracker's claim at an optimizer's step, per parameter it holds: whether the gradient was reset
since that optimizer's previous step (`_TRAINCHECK_grad_reset`, what GradientResetRelation checks)."""

import torch

from test_tracker_new_gradient import RecordingCore
from traincheck.tracking.tracker import ModelTracker

ZERO_GRAD = "torch.optim.optimizer.Optimizer.zero_grad"


def _setup(n_params=1):
    core = RecordingCore()
    tracker = ModelTracker(core, style="sampler")
    model = torch.nn.Linear(3, 2, bias=n_params > 1)
    tracker.track(model, "model")
    return core, tracker, model


def _backward(model):
    model(torch.ones(4, 3)).sum().backward()


def _step(core, tracker, optimizer) -> dict:
    """What the optimizer's step claims, by parameter name id (the step's own dump)."""
    optimizer.step()
    tracker.after_optimizer_step(optimizer, (), {})
    return core.grad_resets[-1]


def _zero_grad(tracker, optimizer, **kwargs):
    tracker.around_api(ZERO_GRAD, "pre")
    optimizer.zero_grad(**kwargs)
    tracker.around_api(ZERO_GRAD, "post")


def test_the_first_step_claims_nothing_and_a_new_gradient_is_a_reset():
    core, tracker, model = _setup()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    _backward(model)
    assert set(_step(core, tracker, opt).values()) == {None}  # no earlier step to compare with
    model.weight.grad = None  # set_to_none by hand: backward makes a new tensor
    _backward(model)
    assert set(_step(core, tracker, opt).values()) == {True}


def test_backward_into_the_last_steps_gradient_is_no_reset():
    core, tracker, model = _setup()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    _backward(model)
    _step(core, tracker, opt)
    _backward(model)  # no zero_grad: accumulated into the same tensor
    assert set(_step(core, tracker, opt).values()) == {False}


def test_a_recorded_zero_grad_in_place_is_a_reset():
    core, tracker, model = _setup()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    _backward(model)
    _step(core, tracker, opt)
    grad = model.weight.grad
    _zero_grad(tracker, opt, set_to_none=False)
    _backward(model)
    assert model.weight.grad is grad  # the same tensor, zeroed in place
    assert set(_step(core, tracker, opt).values()) == {True}


def test_each_optimizer_judges_only_its_parameters_between_its_own_steps():
    core, tracker, model = _setup(n_params=2)
    weight_opt = torch.optim.SGD([model.weight], lr=0.1)
    bias_opt = torch.optim.SGD([model.bias], lr=0.1)
    weight_id, bias_id = (tracker._ids[f"model.{n}"] for n in ("weight", "bias"))
    _backward(model)
    _step(core, tracker, weight_opt)
    _step(core, tracker, bias_opt)
    # Only the weight's optimizer resets, between the weight's steps; the bias accumulates.
    _zero_grad(tracker, weight_opt)
    _backward(model)
    claims = _step(core, tracker, weight_opt)
    assert claims[weight_id] is True and claims[bias_id] is None  # not this optimizer's parameter
    claims = _step(core, tracker, bias_opt)
    assert claims[bias_id] is False and claims[weight_id] is None


def test_a_parameter_without_a_gradient_at_either_step_claims_nothing():
    core, tracker, model = _setup()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    _step(core, tracker, opt)  # no gradient yet (a frozen layer, later unfrozen)
    _backward(model)
    assert set(_step(core, tracker, opt).values()) == {None}


def test_the_model_mode_is_claimed_for_the_parameters_the_optimizer_steps_with_a_gradient():
    core = RecordingCore()
    tracker = ModelTracker(core, style="sampler")
    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2), torch.nn.Linear(2, 1))
    tracker.track(model, "model")
    frozen = model[2].weight
    frozen.requires_grad_(False)
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
    ids = {n: tracker._ids[f"model.{n}"] for n in ("0.weight", "1.weight", "2.weight")}

    def step():
        model(torch.ones(4, 3)).sum().backward()
        opt.step()
        tracker.after_optimizer_step(opt, (), {})
        opt.zero_grad()
        return core.model_training[-1]

    claims = step()
    assert claims[ids["0.weight"]] is True
    assert claims[ids["2.weight"]] is None  # no gradient, and not the optimizer's
    model[1].eval()  # a layer frozen on purpose: only the model's own flag counts
    assert step()[ids["1.weight"]] is True
    model.eval()  # the model left in eval mode
    claims = step()
    assert claims[ids["0.weight"]] is False and claims[ids["1.weight"]] is False


def test_a_ddp_like_wrapper_or_a_trainer_claims_the_mode_of_the_model_it_holds():
    class Trainer:  # holds its model in .model, as transformers' Trainer does
        def __init__(self, model):
            self.model = model

    core = RecordingCore()
    tracker = ModelTracker(core, style="sampler")
    model = torch.nn.Linear(3, 1)
    tracker.track(Trainer(model), "trainer")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model.eval()
    model(torch.ones(2, 3)).sum().backward()
    opt.step()
    tracker.after_optimizer_step(opt, (), {})
    assert set(core.model_training[-1].values()) == {False}


def test_an_optimizer_over_frozen_parameters_claims_it_has_no_gradient_to_apply():
    core = RecordingCore()
    tracker = ModelTracker(core, style="sampler")
    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Linear(2, 1))
    tracker.track(model, "model")
    backbone, head = model[0], model[1]
    for p in backbone.parameters():
        p.requires_grad_(False)
    stale = torch.optim.SGD(backbone.parameters(), lr=0.1)  # built before the head: holds only frozen ones
    working = torch.optim.SGD(model.parameters(), lr=0.1)
    ids = {n: tracker._ids[f"model.{n}"] for n in ("0.weight", "1.weight")}
    model(torch.ones(4, 3)).sum().backward()

    stale.step()
    tracker.after_optimizer_step(stale, (), {})
    claims = core.optimizer_has_gradients[-1]
    assert claims[ids["0.weight"]] is False and claims[ids["1.weight"]] is None  # the head is not its parameter

    working.step()
    tracker.after_optimizer_step(working, (), {})
    claims = core.optimizer_has_gradients[-1]
    assert claims[ids["0.weight"]] is True and claims[ids["1.weight"]] is True  # frozen ones included


def test_a_head_put_on_after_tracking_began_is_followed():
    from torch.nn.modules.module import register_module_module_registration_hook

    core = RecordingCore()
    tracker = ModelTracker(core, style="sampler")
    handle = register_module_module_registration_hook(tracker.module_registered)
    try:
        model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Linear(2, 1))
        tracker.track(model, "model")
        model[1] = torch.nn.Linear(2, 1)  # a new head: its parameters are new tensors
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model(torch.ones(4, 3)).sum().backward()
        opt.step()
        tracker.after_optimizer_step(opt, (), {})
    finally:
        handle.remove()
    head = tracker._ids["model.1.weight"]
    claims = core.optimizer_has_gradients[-1]
    # The new head's weight is written, and as a parameter the optimizer holds (the old one is gone).
    assert claims[head] is True
    assert [e.param for e in tracker.entries["model"] if e.name_id == head] == [model[1].weight]
