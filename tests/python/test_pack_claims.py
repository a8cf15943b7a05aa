"""Zero-setup detection with the shipped pack (issue 26): collected in-process with `-i pack:default` and
no good run, the correct fine-tuning loop raises no alarm, and each bug the claims at optimizer steps
tell is found by its relation while the program runs."""

import glob
import json
from pathlib import Path

import pytest

from conftest import SCRIPTS, collect

CLAIM_RELATIONS = {"GradientResetRelation", "TrainingModeRelation", "OptimizerHasGradientsRelation",
                   "GradientResetOnceRelation", "GradientClippedRelation"}


def _violated_relations(tmp_path: Path, bug: str) -> set[str]:
    out = tmp_path / bug
    proc = collect(tmp_path, "-p", str(SCRIPTS / "claims_loop.py"), "--output-dir", str(out), "-i", "pack:default",
                   "--models-to-track", "model", script_args=["--bug", bug])
    assert proc.returncode == 0, proc.stderr
    summaries = glob.glob(str(out / "online_check" / "summary_*.json"))
    assert summaries, proc.stderr
    violated = set()
    for path in summaries:
        summary = json.loads(Path(path).read_text())
        assert summary["checked"] > 0
        violated |= {key.split("|")[0] for key in summary["violated_invariants"]}
    return violated


def test_the_correct_loop_raises_no_alarm(tmp_path):
    assert _violated_relations(tmp_path, "none") == set()


@pytest.mark.parametrize("bug, relation", [("no_zero_grad", "GradientResetRelation"),
                                           ("eval_mode", "TrainingModeRelation"),
                                           ("optimizer_over_frozen", "OptimizerHasGradientsRelation"),
                                           ("zero_grad_per_micro_batch", "GradientResetOnceRelation"),
                                           ("clip_after_step", "GradientClippedRelation")])
def test_each_bug_is_found_by_its_claim(tmp_path, bug, relation):
    assert _violated_relations(tmp_path, bug) & CLAIM_RELATIONS == {relation}
