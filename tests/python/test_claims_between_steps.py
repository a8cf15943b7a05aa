"""Zero-setup detection of what runs between optimizer steps, with the shipped pack and no model named: the
correct data-parallel loop (tests/python/scripts/claims_data_loop.py) raises no alarm, and each of its bugs
is found by its claim's relation in-process (ParameterGetsGradientsRelation, EvalModeInValidationRelation,
ForwardThroughWrapperRelation, SamplerEpochAdvancesRelation), the same relations offline on the trace."""

import glob
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SCRIPTS, collect

RELATIONS = {"ParameterGetsGradientsRelation", "EvalModeInValidationRelation", "ForwardThroughWrapperRelation",
             "SamplerEpochAdvancesRelation"}


def _violated_in_process(out: Path) -> set[str]:
    """The relations of the invariants a collect's in-process check found violated."""
    violated = set()
    for path in glob.glob(str(out / "online_check" / "summary_*.json")):
        violated |= {key.split("|")[0] for key in json.loads(Path(path).read_text())["violated_invariants"]}
    return violated


def _run(tmp_path: Path, bug: str) -> tuple[set[str], set[str]]:
    """(relations of the pack violated in-process, and offline by traincheck-check on the same trace)."""
    out = tmp_path / bug
    proc = collect(tmp_path, "-p", str(SCRIPTS / "claims_data_loop.py"), "--output-dir", str(out),
                   script_args=["--bug", bug])
    assert proc.returncode == 0, proc.stderr
    online = _violated_in_process(out)
    check = subprocess.run(["traincheck-check", "-f", str(out), "-i", str(out / "online_check" / "invariants.json"),
                            "-o", str(tmp_path / f"{bug}_check"), "--no-html-report"], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    summary = json.loads(next((tmp_path / f"{bug}_check").rglob("violations_summary.json")).read_text())
    offline = {v["relation_type"] for v in summary["violations"]}
    return online, offline


def test_the_correct_loop_raises_no_alarm(tmp_path):
    online, offline = _run(tmp_path, "none")
    assert online == set() and offline == set()


@pytest.mark.parametrize("bug, relation", [("detached_encoder", "ParameterGetsGradientsRelation"),
                                           ("encoder_left_frozen", "ParameterGetsGradientsRelation"),
                                           ("validate_in_train_mode", "EvalModeInValidationRelation"),
                                           ("forward_bypasses_ddp", "ForwardThroughWrapperRelation"),
                                           ("no_set_epoch", "SamplerEpochAdvancesRelation")])
def test_each_bug_is_found_by_its_claim_online_and_offline(tmp_path, bug, relation):
    online, offline = _run(tmp_path, bug)
    assert online & RELATIONS == {relation}
    assert offline & RELATIONS == {relation}


# The missing reset in both update styles; each correct reset through `p.data` after clipping (where the
# clipping's in-place writes to the gradient must not pass for a reset, nor a reset for none), and the
# in-place zeroing also updating in place.
@pytest.mark.parametrize("style, through_data", [("missing_reset", False), ("missing_reset", True),
                                                 ("zero_in_place", False), ("zero_in_place", True),
                                                 ("set_to_none", True), ("zero_grad_first", True)])
def test_a_loop_updating_parameters_by_hand_is_told_a_missing_reset(tmp_path, style, through_data):
    out = tmp_path / style
    proc = collect(tmp_path, "-p", str(SCRIPTS / "hand_update_loop.py"), "--output-dir", str(out),
                   script_args=["--style", style] + (["--through-data"] if through_data else []))
    assert proc.returncode == 0, proc.stderr
    assert _violated_in_process(out) == ({"GradientResetRelation"} if style == "missing_reset" else set())


@pytest.mark.parametrize("validation", ["eval", "missing_eval"])
def test_a_loop_updating_parameters_by_hand_is_told_validation_in_training_mode(tmp_path, validation):
    out = tmp_path / validation
    proc = collect(tmp_path, "-p", str(SCRIPTS / "hand_update_loop.py"), "--output-dir", str(out),
                   script_args=["--validation", validation])
    assert proc.returncode == 0, proc.stderr
    assert _violated_in_process(out) == ({"EvalModeInValidationRelation"} if validation == "missing_eval" else set())


COPY_AND_PICKLE = """
import copy, io, torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    opt.zero_grad()
    model(torch.ones(2, 4)).sum().backward()
    opt.step()
    ema = copy.deepcopy(model)  # an EMA or best-model copy
    buf = io.BytesIO()
    torch.save(model, buf)  # the whole module, its hooks included
    buf.seek(0)
    loaded = torch.load(buf, weights_only=False)
    with torch.no_grad():
        print("RESULT", round(float(ema(torch.ones(1, 4)).sum()), 5), round(float(loaded(torch.ones(1, 4)).sum()), 5),
              b"traincheck" in buf.getvalue())
"""


def test_a_watched_model_can_be_deep_copied_and_pickled_as_without_the_tool(tmp_path):
    script = tmp_path / "copy_pickle.py"
    script.write_text(COPY_AND_PICKLE)
    plain = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True)
    assert plain.returncode == 0, plain.stderr
    proc = collect(tmp_path, "-p", str(script), "--output-dir", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    results = [line for line in proc.stdout.splitlines() if line.startswith("RESULT")]
    assert results == [line for line in plain.stdout.splitlines() if line.startswith("RESULT")]
    assert all(line.endswith("False") for line in results)  # a pickled model names nothing of traincheck's
