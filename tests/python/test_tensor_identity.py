"""A tensor argument's identity is its data, not its Python id (issue 25, item 4): `p.data` makes a
temporary that is freed after the call, and the next parameter's `p.data` often gets the same id, so a
DistinctArgument invariant on `normal_` flagged a correct initialisation of equally shaped parameters.
Identity now comes from the data's address (docs/formats.md §Argument and return values): different
parameters stay different, one parameter initialised twice is the same argument."""
import json

from conftest import collect, read_trace_files, write_script

INIT = """
import sys
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Linear(8, 8), torch.nn.Linear(8, 8))
weights = [m.weight for m in model]
if "--bug" in sys.argv:
    weights = [weights[0], weights[1], weights[0]]  # the first layer initialised twice, the third never
for w in weights:
    w.data.normal_(0.0, 0.02)
print("OK", round(float(sum(w.sum() for w in weights)), 6))
"""

DISTINCT_NORMAL = {
    "text_description": "normal_ receives different arguments in each call of a step",
    "relation": "DistinctArgumentRelation",
    "params": [{"param_type": "APIParam", "api_full_name": "torch._C.TensorBase.normal_"}],
    "precondition": {"distinct_arg": {"inverted": False, "preconditions": [{"clauses": "Unconditional"}]}},
    "num_positive_examples": 3, "num_negative_examples": 0,
}


def _violations(tmp_path, out: str, *script_args) -> list:
    script = write_script(tmp_path, "init.py", INIT)
    (tmp_path / "inv.json").write_text(json.dumps(DISTINCT_NORMAL) + "\n")
    r = collect(tmp_path, "-p", str(script), "-i", "inv.json", "--output-dir", out, script_args=script_args)
    assert r.returncode == 0, r.stderr
    failed = tmp_path / out / "online_check" / "failed.log"
    return [json.loads(line) for line in failed.read_text().splitlines() if line.strip()]  # one per line


def test_data_temporaries_of_different_parameters_are_different_arguments(tmp_path):
    assert _violations(tmp_path, "good") == []
    # The temporaries did share Python ids (that was the false alarm): their records tell them apart.
    records = [r for rs in read_trace_files(tmp_path / "good").values() for r in rs
               if r["type"] == "function_call (pre)" and r["function"] == "torch._C.TensorBase.normal_"]
    ids = [r["args"]["0"]["torch.FloatTensor"]["_TRAINCHECK_data_ID"] for r in records]
    assert len(ids) == 3 and len(set(ids)) == 3


def test_one_parameter_initialised_twice_is_the_same_argument(tmp_path):
    assert len(_violations(tmp_path, "bug", "--bug")) >= 1
