"""The tracker's per-parameter state in C++ (traincheck._core.TrackedParams): what its reads of tensors see
and what its slots hold, beyond the claims the tracker tests judge."""

import gc
import weakref

import pytest
import torch

from test_tracker_new_gradient import RecordingCore
from traincheck import _core
from traincheck.tracking import shards, torch_fields
from traincheck.tracking.tracker import ModelTracker

try:
    from traincheck import _torch_fields
except ImportError:  # another torch than the one it was built against: the getters only
    _torch_fields = None


@pytest.fixture(autouse=True, params=["getters", "direct reads"])
def tensor_reads(request, monkeypatch):
    """Every test here runs both ways: reading tensors through torch's getters (another torch than the one
    traincheck._torch_fields was built against) and straight from TensorImpl."""
    direct = request.param == "direct reads"
    if direct and _torch_fields is None:
        pytest.skip("traincheck._torch_fields does not load under this torch")
    installed = torch_fields.load()
    monkeypatch.setattr(torch_fields, "_loaded", direct)
    _core.set_tensor_field_reader(_torch_fields.reader() if direct else None)
    yield
    _core.set_tensor_field_reader(_torch_fields.reader() if installed else None)


def _table():
    return _core.TrackedParams(torch.Tensor, torch.nn.Parameter, torch.strided, shards.local)


def _codes(table, slots, only_changed=False):
    tensors, codes = table.detect(slots, only_changed)
    return codes


def test_a_write_digests_only_what_changed_data_and_gradient_apart():
    table = _table()
    p = torch.nn.Parameter(torch.zeros(3))
    slot = table.add(p, None, None, None, 7, False)
    table.set_order([slot])
    assert _codes(table, None) == [2 * slot]  # first write: the data; no gradient yet
    p.grad = torch.ones(3)
    assert _codes(table, None, only_changed=True) == [2 * slot + 1]
    assert table.written_slots() == [slot]
    assert _codes(table, None, only_changed=True) == [] and table.written_lists() is None
    with torch.no_grad():
        p.add_(1)
    assert _codes(table, None, only_changed=True) == [2 * slot]
    p.grad.mul_(2)
    assert _codes(table, None, only_changed=True) == [2 * slot + 1]
    p.grad = None
    assert _codes(table, None, only_changed=True) == [] and table.written_slots() == [slot]  # written as None
    assert table.digest(2 * slot + 1) is None


def test_a_data_swap_without_a_version_bump_is_seen_by_its_address():
    table = _table()
    p = torch.nn.Parameter(torch.zeros(3))
    slot = table.add(p, None, None, None, 1, False)
    table.set_order([slot])
    table.detect(None, False)
    p.data = torch.ones(3)  # set_data keeps the version counter
    assert _codes(table, None, only_changed=True) == [2 * slot]


def test_a_sparse_gradient_has_no_address_and_is_still_digested():
    emb = torch.nn.Embedding(10, 3, sparse=True)
    emb(torch.tensor([1, 2])).sum().backward()
    core = RecordingCore()
    tracker = ModelTracker(core, style="sampler")
    tracker.track(emb, "emb")
    assert core.grad_digests[-1][1] is not None


def test_a_tensor_subclass_is_read_through_its_attributes():
    class Counted(torch.nn.Parameter):
        reads = 0

        @property
        def grad(self):
            type(self).reads += 1
            return super().grad

    table = _table()
    p = Counted(torch.zeros(2))
    slot = table.add(p, None, None, None, 1, False)
    table.set_order([slot])
    table.detect(None, False)
    assert Counted.reads > 0


def test_a_fused_optimizers_parameters_are_digested_again():
    table = _table()
    p, q = torch.nn.Parameter(torch.zeros(2)), torch.nn.Parameter(torch.zeros(2))
    slots = [table.add(t, None, None, None, i, False) for i, t in enumerate((p, q))]
    table.set_order(slots)
    table.detect(None, False)
    table.forget_data([[q]])
    assert _codes(table, None, only_changed=True) == [2 * slots[1]]


def test_a_replaced_parameter_is_reported_and_a_dropped_slot_lets_its_parameter_go():
    model = torch.nn.Linear(2, 2)
    table = _table()
    slots = [table.add(p, model, name, model, i, False) for i, (name, p) in enumerate(model.named_parameters())]
    table.set_order(slots)
    assert table.replaced() == []
    old = weakref.ref(model.weight)
    model.weight = torch.nn.Parameter(torch.zeros(2, 2))
    assert table.replaced() == [slots[0]]
    table.set_order([slots[1]])  # the weight's slot is dropped
    gc.collect()
    assert old() is None and table.digest(2 * slots[0]) is None and len(table) == 1


def test_the_gradient_last_seen_is_not_kept_once_the_parameter_drops_it():
    # The slot knows its last gradient (weakly, and by its TensorImpl with direct reads) without keeping the
    # gradient's memory: here a numpy array, which lives as long as the tensor's storage does.
    import numpy

    table = _table()
    p = torch.nn.Parameter(torch.zeros(3))
    slot = table.add(p, None, None, None, 1, False)
    table.set_order([slot])
    array = numpy.ones(3, dtype=numpy.float32)
    memory = weakref.ref(array)
    p.grad = torch.from_numpy(array)
    del array
    assert _codes(table, None) == [2 * slot, 2 * slot + 1]
    p.grad = None  # no write since: the slot still refers to that gradient
    gc.collect()
    assert memory() is None
    assert _codes(table, None, only_changed=True) == [] and table.written_slots() == [slot]


def test_a_new_gradient_is_told_from_the_one_before_whatever_their_addresses():
    table = _table()
    p = torch.nn.Parameter(torch.zeros(3))
    slot = table.add(p, None, None, None, 1, False)
    table.set_order([slot])
    for step in range(5):  # each a fresh tensor, as backward makes after zero_grad(set_to_none=True)
        p.grad = torch.full((3,), float(step))
        assert _codes(table, None, only_changed=True) == ([2 * slot, 2 * slot + 1] if step == 0 else [2 * slot + 1])
        p.grad = None
        gc.collect()
    assert _codes(table, None, only_changed=True) == []
    g = torch.ones(3)
    p.grad = g
    assert _codes(table, None, only_changed=True) == [2 * slot + 1]
    assert _codes(table, None, only_changed=True) == []  # the same gradient, unchanged
    g.data = torch.zeros(3)  # the same tensor object, another memory: no version bump
    assert _codes(table, None, only_changed=True) == [2 * slot + 1]


def test_a_parameter_tracked_under_two_names_is_held_under_both():
    core = RecordingCore()
    tracker = ModelTracker(core, style="sampler")
    model = torch.nn.Linear(2, 1, bias=False)
    tracker.track(model, "a")
    tracker.track(model, "b")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.ones(1, 2)).sum().backward()
    opt.step()
    tracker.after_optimizer_step(opt, (), {})
    assert core.optimizer_has_gradients[-1] == {core.names["a.weight"]: True, core.names["b.weight"]: True}


TRAIN = """
import torch
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    optimizer.zero_grad()
    model(torch.ones(2, 4)).sum().backward()
    optimizer.step()
"""


def test_a_tracked_run_leaves_the_scripts_stderr_as_without_the_tool(tmp_path):
    # The tracker's native state lives until the interpreter exits: nothing of it may print at teardown.
    import subprocess
    import sys

    from conftest import collect, write_script

    write_script(tmp_path, "train.py", TRAIN)
    plain = subprocess.run([sys.executable, "train.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert plain.returncode == 0, plain.stderr
    result = collect(tmp_path, "-p", "train.py", "--output-dir", "out")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out" / "program_stderr.txt").read_text() == plain.stderr
