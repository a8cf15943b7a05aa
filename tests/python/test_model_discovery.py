"""The models an optimizer trains, found without --models-to-track (traincheck/tracking/discovery.py)."""

import copy
import warnings

import torch
import torch.nn as nn

from traincheck.tracking import discovery


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4))


class Wrapper(nn.Module):
    """Holds nothing of its own, as DDP and a torch.compile'd module do."""

    def __init__(self, module):
        super().__init__()
        self.module = module


def _names(owners):
    return [name for name, _, _ in owners]


def test_each_root_holding_a_stepped_parameter_is_named_after_its_class_in_parameter_order():
    first, second = Generator(), Generator()
    params = [*second.parameters(), *first.parameters()]
    owners = discovery.owners_of(params, set())
    assert _names(owners) == ["Generator", "Generator#2"]
    assert owners[0][1] is second and owners[1][1] is first


def test_a_copy_no_optimizer_steps_is_not_returned():
    student = Generator()
    teacher = copy.deepcopy(student)  # no registration hook sees a deepcopy
    owners = discovery.owners_of(list(student.parameters()), set())
    assert [obj for _, obj, _ in owners] == [student]
    assert teacher in discovery.live_roots()


def test_a_wrapper_is_unwrapped_and_its_inner_model_named():
    model = Generator()
    wrapped = Wrapper(model)
    owners = discovery.owners_of(list(wrapped.parameters()), set())
    assert owners == [("Generator", model, wrapped)]


def test_a_submodule_is_never_a_root():
    model = Generator()
    owners = discovery.owners_of(list(model.body[2].parameters()), set())
    assert [obj for _, obj, _ in owners] == [model]


def test_a_tensor_no_module_holds_is_tracked_as_itself_and_taken_names_are_not_reused():
    scale = nn.Parameter(torch.ones(1))
    model = Generator()
    owners = discovery.owners_of([scale, *model.parameters()], {"Generator"})
    assert _names(owners) == ["Generator#2", "Parameter_0"]
    assert owners[1][1] is scale


def test_the_walk_over_live_objects_warns_nothing():
    Generator()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        import torch.distributed  # noqa: F401 - its deprecated attributes answer isinstance with a warning

        discovery.live_roots()


class _DroppingCore:
    """The recorder calls the tracker makes, recording nothing."""

    def intern(self, text):
        return hash(text) & 0xFFFFFFFF

    def is_recording(self):
        return True

    def set_inside_recorder(self, value):
        return False

    def record_var_states(self, *args, **kwargs):
        pass


def _step(model, tracker):
    """One training step of a new optimizer over `model`, with the tracker's hook after it."""
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.randn(2, 4)).sum().backward()
    optimizer.step()
    tracker.after_optimizer_step(optimizer, (), {})
    return optimizer


def test_a_finished_rounds_model_is_no_longer_held_once_no_optimizer_holds_it():
    import gc
    import weakref

    from traincheck.tracking.tracker import ModelTracker

    tracker = ModelTracker(_DroppingCore(), discover=True)
    first = nn.Linear(4, 2)
    optimizer = _step(first, tracker)
    assert set(tracker.entries) == {"Linear"}
    gone = weakref.ref(first)
    del first, optimizer  # the round is over: the script keeps neither
    gc.collect()
    second = nn.Linear(4, 2)
    kept = _step(second, tracker)
    gc.collect()
    assert set(tracker.entries) == {"Linear"} and tracker.objects["Linear"] is second
    assert gone() is None  # the tracker no longer keeps the first round's model alive
    assert kept is not None
