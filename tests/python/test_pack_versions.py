"""A pack knows where it holds: an invariant about a library's implementation, vetted on other versions
of it than the run's, is not checked, in-process and offline alike, and the run says how many and why in
one line (cpp/invariant/version_gate.h). Proved without a second torch: the invariant claims to be vetted
on a torch series this run does not have."""

import json
import subprocess
from pathlib import Path

import torch

from conftest import collect, write_script

TRAIN = """
import torch
model = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    opt.zero_grad()
    model(torch.randn(3, 4)).sum().backward()
    opt.step()
"""

THIS_SERIES = ".".join(torch.__version__.split("+")[0].split(".")[:2])


def _never_true(vetted_on: dict | None) -> dict:
    """SGD.step contains relu: violated at every step of this run."""
    invariant = {
        "text_description": "torch.optim.sgd.SGD.step contains torch._VariableFunctionsClass.relu",
        "relation": "APIContainRelation",
        "params": [{"param_type": "APIParam", "api_full_name": "torch.optim.sgd.SGD.step"},
                   {"param_type": "APIParam", "api_full_name": "torch._VariableFunctionsClass.relu"}],
        "precondition": {"parent_func_call_pre": {"inverted": False, "preconditions": [{"clauses": "Unconditional"}]}},
        "num_positive_examples": 10, "num_negative_examples": 0,
    }
    if vetted_on is not None:
        invariant["vetted_on"] = vetted_on
    return invariant


def _run(tmp_path: Path, vetted_on: dict | None):
    invariants = tmp_path / "invariants.json"
    invariants.write_text(json.dumps(_never_true(vetted_on)) + "\n")
    script = write_script(tmp_path, "train.py", TRAIN)
    out = tmp_path / "run"
    proc = collect(tmp_path, "-p", str(script), "--output-dir", str(out), "-i", str(invariants))
    assert proc.returncode == 0, proc.stderr
    return proc, out, invariants


def _offline(tmp_path: Path, out: Path, invariants: Path) -> str:
    proc = subprocess.run(["traincheck-check", "-f", str(out), "-i", str(invariants), "-o", str(tmp_path / "checked")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stderr


def test_an_invariant_vetted_on_another_series_is_not_checked_and_the_run_says_why(tmp_path):
    proc, out, invariants = _run(tmp_path, {"torch": ["1.0"]})
    summary = json.loads(next((out / "online_check").glob("summary_*.json")).read_text())
    assert summary["violations"] == 0 and summary["version_skipped"] == 1 and summary["not_checked"] == 1
    version = next(line for line in (out / "env_dump.txt").read_text().splitlines() if line.startswith("torch "))
    note = f"1 invariant vetted on torch 1.0 not checked on {version}"
    assert summary["version_note"] == note
    assert f"online check: {note}" in proc.stderr
    offline = _offline(tmp_path, out, invariants)
    assert note in offline and "0 failed" in offline


def test_the_same_invariant_vetted_on_this_series_is_checked(tmp_path):
    for vetted_on in ({"torch": [THIS_SERIES]}, None):
        folder = tmp_path / str(bool(vetted_on))
        folder.mkdir()
        proc, out, invariants = _run(folder, vetted_on)
        summary = json.loads(next((out / "online_check").glob("summary_*.json")).read_text())
        assert summary["violations"] > 0 and summary["version_skipped"] == 0, proc.stderr
        assert "not checked on" not in proc.stderr
        assert "1 failed" in _offline(folder, out, invariants)


def test_the_shipped_pack_stamps_its_implementation_invariants_and_not_its_semantic_ones():
    from traincheck import invariant_sources

    pack = [json.loads(line) for line in Path(invariant_sources.resolve("pack:default")).read_text().splitlines() if line]
    # The rule (Relation::version_bound): an invariant naming a function is about the library's implementation,
    # except ModuleMode's (a module's mode); the claims and Consistency name variable types only.
    for invariant in pack:
        names_function = any("api_full_name" in param for param in invariant["params"])
        if not names_function or invariant["relation"] == "ModuleModeRelation":
            assert "vetted_on" not in invariant, invariant["text_description"]
        else:
            assert invariant["vetted_on"] == {"torch": [THIS_SERIES]}, invariant["text_description"]
