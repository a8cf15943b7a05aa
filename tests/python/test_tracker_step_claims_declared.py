"""Every step claim declared in C++ (cpp/record/step_claims.h, listed by `_core.step_claims()`) is computed by
the tracker and reaches the trace as its attribute; a claim the tracker passes under an undeclared name is an
error, not a dropped claim."""

import subprocess
import sys
import textwrap

import torch

from conftest import read_trace_files
from test_tracker_new_gradient import RecordingCore
from traincheck import _core
from traincheck.tracking.tracker import ModelTracker

CLIP = "torch.nn.utils.clip_grad.clip_grad_norm_"


def _declared() -> list[dict]:
    return _core.step_claims()


def test_the_table_is_well_formed():
    claims = _declared()
    assert claims, "no step claim declared"
    assert [c["bit"] for c in claims] == list(range(len(claims)))
    for c in claims:
        assert c["attribute"] == "_TRAINCHECK_" + c["name"]
        assert c["meaning"]
    assert len({c["name"] for c in claims}) == len(claims)


# Claims made only at the end of the run, not at an optimizer's step.
AT_EXIT_ONLY = {"optimizer_stepped"}


def test_the_tracker_passes_every_declared_claim_and_no_other():
    core = RecordingCore()
    tracker = ModelTracker(core, style="sampler")
    model = torch.nn.Linear(3, 2)
    tracker.track(model, "model")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    tracker.optimizer_built(opt)
    model(torch.ones(4, 3)).sum().backward()
    opt.step()
    tracker.after_optimizer_step(opt, (), {})
    made = core.claims[-1]
    assert made is not None
    assert set(made) == {c["name"] for c in _declared()} - AT_EXIT_ONLY
    tracker.at_exit()
    assert AT_EXIT_ONLY <= set(core.claims[-1])


# One DDP model with dropout (one rank), five steps with a reset, a clipping, a pass of a shuffling
# DistributedSampler and a validation forward in between: every claim is made for some parameter.
EVERY_CLAIM = """
import json, sys
import torch
import torch.distributed as dist
from torch.utils.data.distributed import DistributedSampler
from traincheck import _core, meta_vars
from traincheck.tracking.tracker import ModelTracker
out = sys.argv[1]
dist.init_process_group("gloo", init_method="file://" + out + "_pg", rank=0, world_size=1)
_core.start(out)
_core.set_torch_types(torch.Tensor, torch.nn.Parameter, torch.dtype, torch.device, torch.nn.Module)
tracker = ModelTracker(_core, style="sampler")
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Dropout(0.1)))
tracker.track(model, "model")
opt = torch.optim.SGD(model.parameters(), lr=0.1)
tracker.optimizer_built(opt)
sampler = DistributedSampler(range(8), num_replicas=1, rank=0, shuffle=True)
for epoch in range(5):  # ParameterGetsGradients' claim is made from an optimizer's fifth step
    sampler.set_epoch(epoch)
    tracker.sampler_iterated(sampler)
    meta_vars.start_step()
    model(torch.ones(4, 3)).sum().backward()
    tracker.around_api("{clip}", "pre")
    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
    tracker.around_api("{clip}", "post")
    opt.step()
    tracker.after_optimizer_step(opt, (), {{}})
    opt.zero_grad()
    meta_vars.start_eval_step()
    with torch.no_grad():
        model(torch.ones(1, 3))
tracker.at_exit()  # the claims made at the end of the run
try:
    _core.record_var_states([_core.intern("w")], [model.module[0].weight], [None], [None], _core.intern("torch.nn.Parameter"),
                            claims={{"no_such_claim": [True]}})
    print("accepted")
except ValueError as e:
    print("rejected:", e)
_core.shutdown()
dist.destroy_process_group()
"""


def test_every_declared_claim_reaches_the_trace(tmp_path):
    script = tmp_path / "claims.py"
    script.write_text(textwrap.dedent(EVERY_CLAIM.format(clip=CLIP)))
    run = subprocess.run([sys.executable, str(script), str(tmp_path / "out")], check=True, timeout=120,
                         capture_output=True, text=True)
    assert "rejected:" in run.stdout and "no_such_claim" in run.stdout
    states = [r for records in read_trace_files(tmp_path / "out", "VAR").values() for r in records
              if r["type"] == "state_change"]
    written = {k: v for r in states for k, v in r["attributes"].items() if k.startswith("_TRAINCHECK_")}
    for claim in _declared():
        assert claim["attribute"] in written, f"{claim['name']} is declared but never reaches the trace"
