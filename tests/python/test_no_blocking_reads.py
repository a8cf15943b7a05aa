"""The tool never makes the training thread wait for the device (docs/collection.md §Tensor digests):
on a device, digests are copied to host memory without blocking and read once the copy is known done.
Without a GPU the meta device stands in for one (scripts/device_reads.py); with one, the same runs on it too.
Every blocking device-to-host read made from the tool's code is counted per training step."""
import json

import pytest
import torch

from conftest import SCRIPTS, collect, read_trace_files
from test_tracking import ZERO_GRAD_INVARIANT  # over parameters: selective mode writes their states around zero_grad

DEPLOYED = SCRIPTS.parents[2] / "eval" / "perf_overhead" / "invariants" / "deployed_100.json"
PARAMS = {"model.0.weight", "model.0.bias", "model.2.weight", "model.2.bias"}


DEVICES = ["meta", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU"))]


def _run(tmp_path, device, *mode_args):
    result = collect(tmp_path, "-p", str(SCRIPTS / "meta_device_training.py"), "--output-dir", "out", *mode_args,
                     env={"DEVICE_READS_OUT": str(tmp_path / "reads.jsonl"), "TRAINING_DEVICE": device})
    assert result.returncode == 0, result.stdout + result.stderr
    steps = [json.loads(line) for line in (tmp_path / "reads.jsonl").read_text().splitlines()]
    assert [s["step"] for s in steps] == list(range(6))
    states = [r for recs in read_trace_files(tmp_path / "out", "VAR").values() for r in recs]
    return steps, states


def _assert_tracked_every_step(states):
    """The states were written on the device: every parameter, with digests, at every step."""
    assert {r["var_name"] for r in states} == PARAMS
    digested = [r for r in states if isinstance(r["attributes"]["data"], int)]
    assert {r["meta_vars"]["step"] for r in digested} >= set(range(1, 6))
    assert any(isinstance(r["attributes"]["grad"], int) for r in states)


@pytest.mark.parametrize("device", DEVICES)
def test_selective_mode_with_tracking_makes_no_blocking_device_read(tmp_path, device):
    (tmp_path / "inv.json").write_text(DEPLOYED.read_text() + json.dumps(ZERO_GRAD_INVARIANT) + "\n")
    steps, states = _run(tmp_path, device, "-i", "inv.json", "--models-to-track", "model")
    _assert_tracked_every_step(states)
    assert [s["reads"] for s in steps] == [0] * 6, steps[-1]["where"]


@pytest.mark.parametrize("device", DEVICES)
def test_model_tracking_makes_no_blocking_device_read(tmp_path, device):
    steps, states = _run(tmp_path, device, "--models-to-track", "model")
    _assert_tracked_every_step(states)
    assert [s["reads"] for s in steps] == [0] * 6, steps[-1]["where"]
