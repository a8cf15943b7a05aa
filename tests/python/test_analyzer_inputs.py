"""Wrong inputs to the analyzers are clear errors naming the path, never a hang, a crash or silence."""
import json
import os
import subprocess

import pytest

INVARIANT = {
    "text_description": "Adam.step contains adam", "relation": "APIContainRelation",
    "params": [{"param_type": "APIParam", "api_full_name": "torch.optim.adam.Adam.step"},
               {"param_type": "APIParam", "api_full_name": "torch.optim.adam.adam"}],
    "precondition": {"parent_func_call_pre": {"inverted": False, "preconditions": [{"clauses": "Unconditional"}]}},
    "num_positive_examples": 2, "num_negative_examples": 0,
}


def run(cmd, cwd):
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=60)


@pytest.fixture
def inputs(tmp_path):
    (tmp_path / "inv.json").write_text(json.dumps(INVARIANT) + "\n")
    (tmp_path / "traces").mkdir()
    os.mkfifo(tmp_path / "fifo")
    return tmp_path


def test_an_invariant_file_that_is_a_folder_or_a_fifo_is_an_error_naming_it(inputs):
    for bad, why in (("traces", "is a folder"), ("fifo", "not a plain file")):
        result = run(["traincheck-check", "-f", "traces", "-i", bad, "-o", "out"], inputs)
        assert result.returncode != 0
        assert bad in result.stderr and why in result.stderr, result.stderr
        assert "bad_alloc" not in result.stderr


def test_trace_folders_holding_something_named_like_a_trace_file_that_is_not_a_file_are_errors(inputs):
    os.mkfifo(inputs / "traces" / "trace_VAR_1_1.log")
    for tool in (["traincheck-check", "-i", "inv.json", "-o", "out"], ["traincheck-infer", "-o", "out.json"]):
        result = run([tool[0], "-f", "traces", *tool[1:]], inputs)
        assert result.returncode != 0
        assert "trace_VAR_1_1.log" in result.stderr and "not a plain file" in result.stderr, result.stderr


def test_onlinecheck_on_a_plain_file_is_an_error_and_a_missing_folder_is_announced(inputs):
    result = run(["traincheck-onlinecheck", "-f", "inv.json", "-i", "inv.json"], inputs)
    assert result.returncode == 2 and "not a folder" in result.stderr
    result = run(["traincheck-onlinecheck", "-f", "later", "-i", "inv.json", "--exit-when-idle", "0.5"], inputs)
    assert "later does not exist yet" in result.stderr
