"""A context manager whose subclass overrides `__exit__` only (torch.save: `_open_zipfile_writer_file`
exits what `_opener.__enter__` entered) is exited in the trace in selective mode too: the plan names
`_opener.__exit__`, and the subclass's override is recorded beside it, so the manager's span ends where
the `with` block does (docs/analysis.md §Trace model) instead of running to the end of the trace."""
import json
import subprocess
import sys

SCRIPT = """
import torch
import torch.nn as nn

model = nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    optimizer.zero_grad()
    model(torch.randn(8, 4)).sum().backward()
    optimizer.step()
    torch.save(model.state_dict(), f"ckpt_{step}.pt")
print("done")
"""

INVARIANT = {
    "text_description": "Linear.forward outside torch.save returns tensors that are not leaves",
    "relation": "ConsistentOutputRelation",
    "params": [{"param_type": "APIParam", "api_full_name": "torch.nn.modules.linear.Linear.forward"},
               {"param_type": "VarTypeParam", "var_type": "torch.Tensor", "attr_name": "is_leaf", "const_value": False}],
    "precondition": {"pre_event": {"inverted": True, "preconditions": [{"clauses": [
        {"type": "exist", "prop_name": "meta_vars.context_managers.torch.serialization._opener",
         "additional_path": "None", "prop_dtype": "None"}]}]}},
    "num_positive_examples": 10, "num_negative_examples": 0,
}


def test_a_subclass_exit_of_a_named_manager_is_recorded_in_selective_mode(tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT)
    (tmp_path / "inv.json").write_text(json.dumps(INVARIANT) + "\n")
    result = subprocess.run([sys.executable, "-m", "traincheck.collect_trace", "-p", "train.py", "-i", "inv.json",
                             "--output-dir", "out"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    records = [json.loads(line) for path in (tmp_path / "out").glob("trace_API_*.log") for line in path.read_text().splitlines()]
    enters = [r for r in records if r["function"] == "torch.serialization._opener.__enter__" and r["type"].endswith("(post)")]
    exits = [r for r in records if r["function"].startswith("torch.serialization.") and r["function"].endswith(".__exit__")
             and r["type"].endswith("(pre)")]
    assert enters and len(exits) == len(enters), sorted({r["function"] for r in records})
    assert {r["obj_id"] for r in exits} == {r["obj_id"] for r in enters}
    # The offline check of the same trace: the forward passes after the first save are outside the manager.
    check = subprocess.run(["traincheck-check", "-f", "out", "-i", "inv.json", "-o", "res"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=300)
    assert check.returncode == 0 and " 0 failed" in check.stderr, check.stderr[-2000:]
