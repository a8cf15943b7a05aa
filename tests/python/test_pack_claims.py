"""Zero-setup detection with the shipped pack: collected in-process with `-i pack:default` and no good run,
the correct fine-tuning loop raises no alarm, and each bug the claims at optimizer steps tell is found by
its relation while the program runs, whether or not --models-to-track names the model (without it, the
tracker finds the model each optimizer steps: tracking/discovery.py)."""

import glob
import json
from pathlib import Path

import pytest

from conftest import SCRIPTS, collect

CLAIM_RELATIONS = {"GradientResetRelation", "TrainingModeRelation", "OptimizerHasGradientsRelation",
                   "GradientResetOnceRelation", "GradientClippedRelation"}


# How a user runs it: the pack named with the model, the pack without the model, nothing at all (the
# pack is checked in-process by default, over a full trace).
NAMING = {"named": ["-i", "pack:default", "--models-to-track", "model"], "unnamed": ["-i", "pack:default"],
          "default": []}


def _violated_relations(tmp_path: Path, bug: str, naming: str) -> set[str]:
    out = tmp_path / bug
    proc = collect(tmp_path, "-p", str(SCRIPTS / "claims_loop.py"), "--output-dir", str(out), *NAMING[naming], script_args=["--bug", bug])
    assert proc.returncode == 0, proc.stderr
    summaries = glob.glob(str(out / "online_check" / "summary_*.json"))
    assert summaries, proc.stderr
    violated = set()
    for path in summaries:
        summary = json.loads(Path(path).read_text())
        assert summary["checked"] > 0
        violated |= {key.split("|")[0] for key in summary["violated_invariants"]}
    return violated


@pytest.mark.parametrize("naming", NAMING)
def test_the_correct_loop_raises_no_alarm(tmp_path, naming):
    assert _violated_relations(tmp_path, "none", naming) == set()


@pytest.mark.parametrize("bug, relation", [("no_zero_grad", "GradientResetRelation"),
                                           ("eval_mode", "TrainingModeRelation"),
                                           ("optimizer_over_frozen", "OptimizerHasGradientsRelation"),
                                           ("zero_grad_per_micro_batch", "GradientResetOnceRelation"),
                                           ("clip_after_step", "GradientClippedRelation")])
@pytest.mark.parametrize("naming", NAMING)
def test_each_bug_is_found_by_its_claim(tmp_path, bug, relation, naming):
    assert _violated_relations(tmp_path, bug, naming) & CLAIM_RELATIONS == {relation}


def test_no_pack_records_only_and_refuses_to_be_combined_with_invariant_files(tmp_path):
    out = tmp_path / "out"
    proc = collect(tmp_path, "-p", str(SCRIPTS / "claims_loop.py"), "--output-dir", str(out), "--no-pack")
    assert proc.returncode == 0, proc.stderr
    assert glob.glob(str(out / "trace_API_*.log")) and not (out / "online_check").exists()
    assert "online check" not in proc.stderr
    proc = collect(tmp_path, "-p", str(SCRIPTS / "claims_loop.py"), "--output-dir", str(tmp_path / "o2"), "--no-pack",
                   "-i", "pack:default")
    assert proc.returncode == 2 and "--no-pack" in proc.stderr


def test_an_action_on_violation_without_an_in_process_check_is_refused(tmp_path):
    for off in (["--no-pack"], ["--no-online-check"], ["-i", "pack:default", "--no-online-check"]):
        proc = collect(tmp_path, "-p", str(SCRIPTS / "claims_loop.py"), "--output-dir", str(tmp_path / "o"),
                       "--on-violation", "raise", *off)
        assert proc.returncode == 2 and "--on-violation raise needs the in-process check" in proc.stderr, proc.stderr
        assert not (tmp_path / "o").exists()
