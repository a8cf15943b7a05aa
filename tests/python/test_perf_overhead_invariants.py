"""Sampling of the deployed invariants (make_deployed_invariants.py), without running the tools."""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from eval.perf_overhead import make_deployed_invariants as mdi  # noqa: E402


def contain(parent: str, child: str) -> str:
    return json.dumps({"text_description": f"{parent} contains {child}", "relation": "APIContainRelation",
                       "params": [{"param_type": "APIParam", "api_full_name": parent},
                                  {"param_type": "APIParam", "api_full_name": child}],
                       "precondition": {}, "num_positive_examples": 3, "num_negative_examples": 0})


def test_candidates_are_the_contain_invariants_whose_parent_the_workload_calls():
    lines = [contain("torch.optim.adam.Adam.step", "torch._foreach_add_"),
             contain("torch.optim.sgd.SGD.step", "torch._foreach_add_"),
             contain("torch.nn.functional.relu", "torch.relu"),
             json.dumps({"relation": "ConsistencyRelation", "params": []})]
    invariants = [(line, json.loads(line)) for line in lines]
    functions = {"vae": {"torch.optim.adam.Adam.step", "torch.nn.functional.relu"},
                 "resnet18": {"torch.optim.sgd.SGD.step", "torch.nn.functional.relu"},
                 "gcn": {"torch.spmm"}}
    candidates = mdi.candidates_by_workload(invariants, functions)
    assert candidates["vae"] == [lines[0], lines[2]]
    assert candidates["resnet18"] == [lines[1], lines[2]]
    assert candidates["gcn"] == []


def test_round_robin_sampling_is_seeded_distinct_and_covers_every_workload():
    candidates = {"a": [f"a{i}" for i in range(50)] + ["shared"],
                  "b": [f"b{i}" for i in range(3)] + ["shared"],
                  "c": [f"c{i}" for i in range(200)]}
    chosen = mdi.sample_round_robin(candidates, 100, seed=0)
    assert len(chosen) == 100 and len(set(chosen)) == 100
    assert chosen == mdi.sample_round_robin(candidates, 100, seed=0)
    assert chosen != mdi.sample_round_robin(candidates, 100, seed=1)
    # b has only 4 candidates: all of its own are chosen ("shared" may have been a's pick)
    assert {x for x in chosen if x.startswith("b")} == {"b0", "b1", "b2"}
    assert sum(x.startswith("a") for x in chosen) >= 30 and sum(x.startswith("c") for x in chosen) >= 30
    # the workloads take turns in sorted order: the first three picks are a's, b's and c's
    assert [chosen[i] in candidates[w] for i, w in enumerate("abc")] == [True, True, True]
    assert mdi.sample_round_robin({"a": ["x"], "b": ["x"]}, 100, seed=0) == ["x"]


def test_missing_tools_fail_with_a_message(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(mdi, "find_tool",
                        lambda name, venv=None: None if name == "traincheck-infer" else Path("/bin/true"))
    assert mdi.main(["--work-dir", str(tmp_path / "work"), "--out", str(tmp_path / "out.json")]) == 2
    err = capsys.readouterr().err
    assert "traincheck-infer not found" in err and "traincheck-collect" not in err
    assert not (tmp_path / "out.json").exists() and not (tmp_path / "work").exists()


def test_output_is_sorted_by_description():
    lines = [contain("b", "x"), contain("a", "y")]
    assert mdi.sorted_for_file(lines) == [lines[1], lines[0]]
