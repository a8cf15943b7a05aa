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
