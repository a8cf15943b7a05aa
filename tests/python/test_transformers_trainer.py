"""Hugging Face Transformers' Trainer and model.generate under traincheck-collect, full and selective, and
under infer and check (docs/collection.md §Training libraries): a tiny GPT-2 built from a config (no
download) trained on synthetic tokens gives the same losses and generated tokens as without the tool, its
optimisation steps are numbered by the Trainer's global step, evaluations run in the stage "evaluation",
and a selective run of the same program violates nothing learned from the full one."""
import pytest

pytest.importorskip("transformers", reason="transformers is not installed: pip install 'traincheck[stacks]' "
                    "(scripts/install_deps.sh installs it)")
pytest.importorskip("accelerate", reason="accelerate (needed by transformers' Trainer) is not installed: "
                    "pip install 'traincheck[stacks]'")

from conftest import SCRIPTS  # noqa: E402
from stack_pipeline import (  # noqa: E402
    infer_then_check_selective_run, pre_records, run_collect, run_plain, steps_of_stage, tracked_steps)

SCRIPT = SCRIPTS / "hf_gpt2_trainer.py"
ARGS = ("--steps", "6", "--eval-steps", "3")


def test_trainer_and_generate_keep_results_number_steps_and_check_clean_full_and_selective(tmp_path):
    plain = run_plain(tmp_path, SCRIPT, *ARGS)
    full, _ = run_collect(tmp_path, SCRIPT, "full", "--models-to-track", "model", script_args=ARGS)
    assert full == plain  # losses, evaluation losses and the tokens generate() returned
    assert len(plain["generated"][0]) == 4 + 5  # the prompt and max_new_tokens=5 more

    out = tmp_path / "full"
    # One step per optimisation step, numbered as the Trainer's global step; all of them training.
    assert pre_records(out, "torch.optim.adam.Adam.step") == [(s, "training") for s in range(1, 7)]
    assert pre_records(out, "torch._tensor.Tensor.backward") == [(s, "training") for s in range(1, 7)]
    # Trainer.evaluate runs in its own stage after steps 3 and 6; generate() after model.eval() in "testing".
    assert steps_of_stage(out, "evaluation") == {3, 6}
    assert steps_of_stage(out, "testing") == {6}
    # --models-to-track model: the script's `model` variable, the module the Trainer trains.
    assert tracked_steps(out, "model.transformer.h.0.") == set(range(0, 7))

    selective, online_violated, offline_violated = infer_then_check_selective_run(tmp_path, SCRIPT, ARGS)
    assert selective == plain
    assert (online_violated, offline_violated) == (0, 0)
    assert pre_records(tmp_path / "selective", "torch.optim.adam.Adam.step") == [(s, "training") for s in range(1, 7)]
