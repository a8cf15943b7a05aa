"""collect -> infer -> check on real runs: good runs teach invariants, a buggy run violates them."""
import json
import subprocess

from conftest import SCRIPTS, collect

BUG = """    if len(times) == 3:
        optimizer.zero_grad()  # the bug: gradients dropped before the update at step 4
    optimizer.step()
"""


def run(cmd, cwd):
    result = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def test_invariants_from_good_runs_pass_a_good_run_and_catch_the_buggy_step(tmp_path):
    good = (SCRIPTS / "mlp_adam.py").read_text()
    (tmp_path / "good.py").write_text(good)
    assert "    optimizer.step()\n" in good
    (tmp_path / "buggy.py").write_text(good.replace("    optimizer.step()\n", BUG))
    for name, script in [("good1", "good.py"), ("good2", "good.py"), ("good3", "good.py"), ("buggy", "buggy.py")]:
        assert collect(tmp_path, "-p", script, "--output-dir", name, script_args=["--iters", "8"]).returncode == 0

    # The collector recorded signatures, so the analyzer can bind arguments without torch.
    signatures = json.loads((tmp_path / "good1" / "api_signatures.json").read_text())
    assert [p["name"] for p in signatures["torch.optim.adam.Adam.step"]["params"]] == ["self", "closure"]

    run(["traincheck-infer", "-f", "good1", "good2", "-o", "inv.json"], tmp_path)
    invariants = [json.loads(line) for line in (tmp_path / "inv.json").read_text().splitlines()]
    assert len(invariants) > 10
    assert "APIContainRelation" in {inv["relation"] for inv in invariants}
    assert any(
        [p.get("api_full_name") for p in inv["params"]] == ["torch.optim.adam.Adam.step", "torch.optim.adam._single_tensor_adam"]
        for inv in invariants
    )

    run(["traincheck-check", "-f", "good3", "buggy", "-i", "inv.json", "-o", "results"], tmp_path)
    good_summary = json.loads((tmp_path / "results" / "good3" / "violations_summary.json").read_text())
    assert good_summary["distinct_invariants_violated"] == 0 and good_summary["first_violation_step"] is None
    buggy_summary = json.loads((tmp_path / "results" / "buggy" / "violations_summary.json").read_text())
    assert buggy_summary["first_violation_step"] == 4
    assert any(v["display_name"] == "Adam.step() always calls _single_tensor_adam()" and v["first_step"] == 4
               for v in buggy_summary["violations"])
    # The extra zero_grad() also breaks the learned call order: step() between two zero_grad() calls.
    assert any(v["display_name"] == "Adam.step() between two Optimizer.zero_grad() calls" and v["first_step"] == 4
               for v in buggy_summary["violations"])
    report = (tmp_path / "results" / "report.html").read_text()
    assert "<html" in report and "_single_tensor_adam" in report
