"""Lightning's Trainer(max_steps=...) on the CPU under traincheck-collect, full and selective, and under
infer and check (docs/collection.md §Training libraries): a LightningModule on synthetic data gives the
same losses as without the tool, its training batches are numbered as Lightning's global step,
validation (the sanity check included) runs in the stage "evaluation", and a selective run of the same
program violates nothing learned from the full one."""
import pytest

pytest.importorskip("lightning", reason="lightning is not installed: pip install 'traincheck[stacks]' "
                    "(scripts/install_deps.sh installs it)")

from conftest import SCRIPTS  # noqa: E402
from stack_pipeline import (  # noqa: E402
    infer_then_check_selective_run, pre_records, run_collect, run_plain, steps_of_stage, tracked_steps)

SCRIPT = SCRIPTS / "lightning_regressor.py"
ARGS = ("--steps", "6")


def test_lightning_module_keeps_results_numbers_steps_and_checks_clean_full_and_selective(tmp_path):
    plain = run_plain(tmp_path, SCRIPT, *ARGS)
    full, _ = run_collect(tmp_path, SCRIPT, "full", "--models-to-track", "model", script_args=ARGS)
    assert full == plain and plain["global_step"] == 6

    out = tmp_path / "full"
    assert pre_records(out, "torch.optim.adam.Adam.step") == [(s, "training") for s in range(1, 7)]
    assert pre_records(out, "torch.optim.optimizer.Optimizer.zero_grad") == [(s, "training") for s in range(1, 7)]
    # The sanity check before step 1, then validation after steps 3 and 6 (val_check_interval=3).
    assert steps_of_stage(out, "evaluation") == {0, 3, 6}
    assert tracked_steps(out, "model.net.0.") == set(range(0, 7))

    selective, online_violated, offline_violated = infer_then_check_selective_run(tmp_path, SCRIPT, ARGS)
    assert selective == plain
    assert (online_violated, offline_violated) == (0, 0)
