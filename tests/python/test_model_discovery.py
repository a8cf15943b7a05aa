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
    return [name for name, _ in owners]


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
    assert [obj for _, obj in owners] == [student]
    assert teacher in discovery.live_roots()


def test_a_wrapper_is_unwrapped_and_its_inner_model_named():
    model = Generator()
    wrapped = Wrapper(model)
    owners = discovery.owners_of(list(wrapped.parameters()), set())
    assert owners == [("Generator", model)]


def test_a_submodule_is_never_a_root():
    model = Generator()
    owners = discovery.owners_of(list(model.body[2].parameters()), set())
    assert [obj for _, obj in owners] == [model]


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
