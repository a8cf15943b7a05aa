"""Writes whose digests a device is still copying are held and emitted later as they would have been at
once (tracking/deferred_states.py, record_var_states(hold=True) and release_var_states)."""
import subprocess
import sys

import torch

from conftest import read_trace_files
from test_tracker_new_gradient import RecordingCore
from traincheck.tracking import digest as digest_module
from traincheck.tracking.tracker import ModelTracker

HOLD_AND_RELEASE = """
import sys
import torch
from traincheck import _core
_core.start(sys.argv[1])
_core.set_torch_types(torch.Tensor, torch.nn.Parameter, torch.dtype, torch.device, torch.nn.Module)
_core.set_recording(True)
w = torch.nn.Parameter(torch.ones(3))
var_type, held_name, now_name = (_core.intern(s) for s in ("torch.nn.Parameter", "held", "at_once"))
_core.set_step(3)
held = _core.record_var_states([held_name], [w], ["not read"], [None], var_type, claims={"grad_reset": [True]},
                               hold=True)
_core.record_var_states([now_name], [w], [7], [None], var_type, claims={"grad_reset": [True]})
_core.set_step(4)
_core.set_recording(False)  # a sampled-out step: the held write was recorded, it is emitted all the same
_core.release_var_states(held, [7], [None])
try:
    _core.release_var_states(held, [7], [None])
    print("released twice")
except ValueError as e:
    print("rejected:", e)
_core.shutdown()
"""


def test_a_held_write_is_emitted_with_the_time_step_and_claims_of_its_write(tmp_path):
    script = tmp_path / "hold.py"
    script.write_text(HOLD_AND_RELEASE)
    run = subprocess.run([sys.executable, str(script), str(tmp_path / "out")], timeout=120, capture_output=True,
                         text=True)
    assert run.returncode == 0, run.stderr
    assert "rejected:" in run.stdout
    records = [r for recs in read_trace_files(tmp_path / "out", "VAR").values() for r in recs]
    assert [r["var_name"] for r in records] == ["at_once", "held"]  # emitted when released
    at_once, held = records
    assert held["time"] <= at_once["time"]  # the time of its write, before the write made at once
    assert held["meta_vars"]["step"] == 3
    assert held["attributes"]["data"] == 7
    same = {k: v for k, v in held.items() if k not in ("var_name", "time")}
    assert same == {k: v for k, v in at_once.items() if k not in ("var_name", "time")}


class FakeEvent:
    """A device's copy-done event that completes when the test says."""

    done = False

    def query(self):
        return FakeEvent.done

    def synchronize(self):
        FakeEvent.done = True


class HoldingCore(RecordingCore):
    """The recorder calls of ModelTracker, kept in the order emitted: (name -> data digest, name -> grad
    digest, step at the write)."""

    def __init__(self):
        super().__init__()
        self.emitted, self.step = [], 0

    def record_var_states(self, name_ids, tensors, data, grad, var_type, mode, dump_loc, claims=None, hold=False):
        if hold:
            return (name_ids, self.step)
        self.emitted.append((dict(zip(name_ids, data)), dict(zip(name_ids, grad)), self.step))

    def release_var_states(self, held, data, grad):
        name_ids, step = held
        self.emitted.append((dict(zip(name_ids, data)), dict(zip(name_ids, grad)), step))


def _train(tracker, core, steps):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    tracker.track(model, "model")
    for step in range(1, steps + 1):
        core.step = step
        optimizer.zero_grad()
        model(torch.randn(5, 4)).sum().backward()
        optimizer.step()
        tracker.after_optimizer_step(optimizer, (), {})
        tracker.at_step_end()
        yield step


class _TakesNone:
    """A HostDigests that digests no tensor in place: all go to the torch ops, as a device's do."""

    def digests(self, tensors, table):
        return [0] * len(tensors), list(range(len(tensors)))


def _host_as_device(monkeypatch):
    """Host tensors' digests take a device's path from now on: copied into host memory behind a FakeEvent."""
    add = digest_module.DigestBatch.add
    monkeypatch.setattr(digest_module.Digester, "_host_digests", lambda self: _TakesNone())

    def add_as_device(self, order, digests, device):
        return add(self, order, digests, torch.device("cuda") if device.type == "cpu" else device)

    monkeypatch.setattr(digest_module.DigestBatch, "add", add_as_device)
    monkeypatch.setattr(digest_module, "_copy_done_event", lambda device: FakeEvent())
    FakeEvent.done = False


def _host_run(steps):
    core = HoldingCore()
    tracker = ModelTracker(core, style="sampler")
    for _ in _train(tracker, core, steps):
        pass
    tracker.at_exit()
    return core.emitted


def test_device_writes_wait_for_their_copies_then_go_out_in_order_as_a_host_run_writes_them(monkeypatch):
    at_once = _host_run(3)  # the states when tracked, after each of 3 steps, and the run's verdicts at exit
    assert len(at_once) == 5 and all(isinstance(d, int) for data, _, _ in at_once for d in data.values())
    _host_as_device(monkeypatch)
    core = HoldingCore()
    tracker = ModelTracker(core, style="sampler")
    for _ in _train(tracker, core, 3):
        assert core.emitted == [], "a write went out before its digests were known, or the tool waited"
    FakeEvent.done = True  # the copies complete: the next boundary emits every held write
    tracker.at_step_end()
    assert core.emitted == at_once[:-1]
    tracker.at_exit()
    assert core.emitted == at_once


def test_once_the_copies_are_done_writes_go_out_at_once_again(monkeypatch):
    _host_as_device(monkeypatch)
    core = HoldingCore()
    tracker = ModelTracker(core, style="sampler")
    steps = _train(tracker, core, 2)
    next(steps)
    FakeEvent.done = True
    next(steps)  # step 2's writes: the held ones of step 1 go out first, then step 2's own
    assert [step for _, _, step in core.emitted] == sorted(step for _, _, step in core.emitted)
    assert {step for _, _, step in core.emitted} == {0, 1, 2}


def test_at_exit_waits_for_the_copies_and_writes_everything(monkeypatch):
    at_once = _host_run(2)
    _host_as_device(monkeypatch)
    core = HoldingCore()
    tracker = ModelTracker(core, style="sampler")
    for _ in _train(tracker, core, 2):
        pass
    assert core.emitted == []
    tracker.at_exit()
    assert FakeEvent.done and core.emitted == at_once
