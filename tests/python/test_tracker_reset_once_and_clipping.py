"""The tracker's claims at an optimizer's step that GradientResetOnceRelation and GradientClippedRelation
check: whether at most one reset threw away a computed gradient since that optimizer's previous step
(`_TRAINCHECK_grad_reset_once`), and, when a parameter's gradient was clipped since that step, whether the
step applies the gradient the last clipping left (`_TRAINCHECK_grad_clipped`)."""

import torch

from test_tracker_new_gradient import RecordingCore
from traincheck.tracking.tracker import ModelTracker, mutates_parameters

ZERO_GRAD = "torch.optim.optimizer.Optimizer.zero_grad"
MODULE_ZERO_GRAD = "torch.nn.modules.module.Module.zero_grad"
CLIP = "torch.nn.utils.clip_grad.clip_grad_norm_"


def _setup(*models):
    core = RecordingCore()
    tracker = ModelTracker(core, style="sampler")
    for i, model in enumerate(models):
        tracker.track(model, f"model{i}")
    return core, tracker


def _backward(model, scale=1.0):
    (scale * model(torch.ones(4, 3)).sum()).backward()


def _step(core, tracker, optimizer):
    """The step's claims (reset once, clipped) by parameter name id."""
    optimizer.step()
    tracker.after_optimizer_step(optimizer, (), {})
    return core.grad_reset_once[-1], core.grad_clipped[-1]


def _call(tracker, api, fn):
    """A recorded call: the tracker writes what changed before and after it (the recorder's var hook)."""
    tracker.around_api(api, "pre")
    fn()
    tracker.around_api(api, "post")


def _zero_grad(tracker, optimizer, **kwargs):
    _call(tracker, ZERO_GRAD, lambda: optimizer.zero_grad(**kwargs))


def _clip(tracker, params, max_norm=0.5):
    _call(tracker, CLIP, lambda: torch.nn.utils.clip_grad_norm_(params, max_norm))


def test_accumulating_micro_batches_with_one_reset_per_step_keeps_every_gradient():
    model = torch.nn.Linear(3, 2)
    core, tracker = _setup(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    claims = []
    for _ in range(3):
        for _ in range(4):
            _backward(model)
        claims.append(_step(core, tracker, opt)[0])
        _zero_grad(tracker, opt)
    assert set(claims[0].values()) == {None}  # no earlier step of this optimizer
    assert all(set(c.values()) == {True} for c in claims[1:])


def test_a_reset_in_every_micro_batch_throws_gradients_away():
    model = torch.nn.Linear(3, 2)
    core, tracker = _setup(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    claims = []
    for _ in range(3):
        for _ in range(4):
            _zero_grad(tracker, opt)  # the bug: zero_grad inside the micro-batch loop
            _backward(model)
        claims.append(_step(core, tracker, opt)[0])
    assert set(claims[1].values()) == {False} and set(claims[2].values()) == {False}


def test_two_resets_in_a_row_throw_away_one_gradient():
    # model.zero_grad() and optimizer.zero_grad(set_to_none=False) after each other: the second zeroes
    # zeros again (the gradient changes version), but no gradient was computed in between.
    model = torch.nn.Linear(3, 2)
    core, tracker = _setup(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    claims = []
    for _ in range(3):
        _call(tracker, MODULE_ZERO_GRAD, lambda: model.zero_grad(set_to_none=False))
        _zero_grad(tracker, opt, set_to_none=False)
        _backward(model)
        claims.append(_step(core, tracker, opt)[0])
    assert all(set(c.values()) == {True} for c in claims[1:])


def test_a_discriminator_reset_once_after_the_generators_backward_keeps_the_claim():
    # DCGAN without detach: the generator's loss puts gradients into the discriminator, which the
    # discriminator's zero_grad at the top of the next iteration throws away: once per its step.
    netD, netG = torch.nn.Linear(3, 1), torch.nn.Linear(3, 3)
    core, tracker = _setup(netD, netG)
    optD = torch.optim.SGD(netD.parameters(), lr=0.1)
    optG = torch.optim.SGD(netG.parameters(), lr=0.1)
    d_claims = []
    for _ in range(3):
        _call(tracker, MODULE_ZERO_GRAD, netD.zero_grad)
        netD(netG(torch.ones(4, 3))).sum().backward()  # fake not detached
        d_claims.append(_step(core, tracker, optD)[0])
        _call(tracker, MODULE_ZERO_GRAD, netG.zero_grad)
        (-netD(netG(torch.ones(4, 3))).sum()).backward()
        _step(core, tracker, optG)
    d_names = {i for i, claim in d_claims[-1].items() if claim is not None}
    assert d_names and all(d_claims[-1][i] is True for i in d_names)


def test_clipping_between_backward_and_step_is_claimed_clipped():
    model = torch.nn.Linear(3, 2)
    core, tracker = _setup(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        _zero_grad(tracker, opt)
        _backward(model, scale=10.0)
        _clip(tracker, model.parameters())
        clipped = _step(core, tracker, opt)[1]
        assert set(clipped.values()) == {True}


def test_clipping_after_the_step_leaves_every_later_step_unclipped():
    model = torch.nn.Linear(3, 2)
    core, tracker = _setup(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    clipped = []
    for _ in range(3):
        _zero_grad(tracker, opt)
        _backward(model, scale=10.0)
        clipped.append(_step(core, tracker, opt)[1])
        _clip(tracker, model.parameters())  # the bug: clips a gradient no step uses
    assert set(clipped[0].values()) == {None}  # not clipped yet: no claim
    assert set(clipped[1].values()) == {False} and set(clipped[2].values()) == {False}


def test_an_extra_step_without_clipping_after_a_clipped_one_claims_nothing():
    # A Trainer clips and steps; a callback then sets gradients for another objective and steps again
    # unclipped: no clipping since the previous step, no claim; the next clipped step claims again.
    model = torch.nn.Linear(3, 2)
    core, tracker = _setup(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    claims = []
    for _ in range(2):
        _zero_grad(tracker, opt)
        _backward(model, scale=10.0)
        _clip(tracker, model.parameters())
        claims.append(_step(core, tracker, opt)[1])
        for p in model.parameters():
            p.grad = 1e-2 * p.detach().clone()
        claims.append(_step(core, tracker, opt)[1])
    assert [set(c.values()) for c in claims] == [{True}, {None}, {True}, {None}]


def test_a_program_that_never_clips_or_clips_one_part_claims_nothing_for_the_rest():
    model = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Linear(3, 2))
    core, tracker = _setup(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(2):
        _zero_grad(tracker, opt)
        _backward(model, scale=10.0)
        _clip(tracker, model[0].parameters())  # only the first layer is clipped
        clipped = _step(core, tracker, opt)[1]
    first = {core.names[f"model0.0.{p}"] for p in ("weight", "bias")}
    assert {clipped[i] for i in first} == {True}
    assert {claim for i, claim in clipped.items() if i not in first} == {None}


def test_the_clipping_functions_are_tracked_around_in_full_mode():
    for name in ("torch.nn.utils.clip_grad.clip_grad_norm_", "torch.nn.utils.clip_grad._clip_grads_with_norm_",
                 "torch.nn.utils.clip_grad.clip_grad_value_"):
        assert mutates_parameters(name)
    assert not mutates_parameters("torch.nn.utils.clip_grad._get_total_norm")


def test_a_step_given_a_closure_makes_no_claim_of_resets_between_steps():
    # LBFGS calls its closure (zero_grad, forward, backward) several times inside one step: the resets it
    # makes there are the step's own, not resets between steps.
    model = torch.nn.Linear(3, 2)
    core, tracker = _setup(model)
    opt = torch.optim.LBFGS(model.parameters(), lr=0.1, max_iter=4)

    def closure():
        _zero_grad(tracker, opt)
        loss = model(torch.ones(4, 3)).pow(2).sum()
        loss.backward()
        return loss

    for _ in range(3):
        opt.step(closure)
        tracker.after_optimizer_step(opt, (opt, closure), {})  # as torch's hooks get them: the optimizer first
        assert core.grad_resets[-1] is None and core.grad_reset_once[-1] is None
    sgd = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(2):  # a step without a closure claims them again
        _zero_grad(tracker, sgd)
        _backward(model)
        sgd.step()
        tracker.after_optimizer_step(sgd, (sgd,), {})
    assert set(core.grad_reset_once[-1].values()) == {True}
    assert set(core.grad_resets[-1].values()) == {True}
