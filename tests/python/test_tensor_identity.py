"""A tensor argument's identity is its data, not its Python id: `p.data` makes a
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


# Evaluation passes under no_grad: each pass's hidden states are freed before the next pass allocates its
# own, often at the same address. Different tensors at one address must stay different arguments: they
# made DistinctArgument alarm on correct runs whenever the allocator happened to reuse an address. A
# fixed mmap threshold makes the reuse certain here (each 1 MB block is its own mapping, unmapped when
# freed, and the next mapping of that size lands in the gap it left).
PASSES = """
import torch
torch.manual_seed(0)
layer = torch.nn.Linear(512, 4)
x = torch.randn(512, 512)
with torch.no_grad():
    for _ in range(6):
        hidden = torch.tanh(x)  # a fresh 1 MB tensor each pass
        layer(hidden)
        del hidden
print("OK")
"""


def test_different_tensors_at_one_reused_address_are_different_arguments(tmp_path):
    script = write_script(tmp_path, "passes.py", PASSES)
    r = collect(tmp_path, "-p", str(script), "--output-dir", "out", env={"MALLOC_MMAP_THRESHOLD_": "131072"})
    assert r.returncode == 0, r.stderr
    records = [r for rs in read_trace_files(tmp_path / "out").values() for r in rs
               if r["type"] == "function_call (pre)" and r["function"] == "torch.nn.modules.linear.Linear.forward"]
    ids = [r["args"]["1"]["torch.FloatTensor"]["_TRAINCHECK_data_ID"] for r in records]
    assert len(ids) == 6
    address = (1 << 48) - 1  # an identity's low bits are the address
    assert len({i & address for i in ids}) < 6  # the scenario: some pass reused an earlier pass's address
    assert len(set(ids)) == 6


FAKE = """
import torch
from torch._subclasses.fake_tensor import FakeTensorMode
with FakeTensorMode():
    x = torch.randn(4, 4)
    y = torch.nn.functional.relu(x @ x)
print("RESULT", tuple(y.shape), type(y).__name__)
"""


def test_fake_tensors_are_recorded_without_asking_for_their_data_pointer(tmp_path):
    # A FakeTensor (FSDP2, torch.compile and DTensor make them) has no data; asking its data_ptr() makes
    # torch print a deprecation warning into the user's output, which the tool must never add.
    script = write_script(tmp_path, "fake.py", FAKE)
    r = collect(tmp_path, "-p", str(script), "--output-dir", "out")
    assert r.returncode == 0, r.stderr
    assert "RESULT (4, 4) FakeTensor" in r.stdout
    assert "data pointer of FakeTensor" not in r.stderr, r.stderr
    fake_args = [r for recs in read_trace_files(tmp_path / "out", "API").values() for r in recs
                 if r["function"].endswith("relu") and r["type"] == "function_call (pre)"]
    assert fake_args, "relu was recorded"
