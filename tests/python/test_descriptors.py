"""--instr-descriptors: torch.Tensor's C methods (normal_, add_, ...) wrapped and named as the original
names them, torch._C.TensorBase.<name> (docs/collection.md §Which functions are wrapped)."""
import json
import subprocess
import sys

import torch

from conftest import all_records, collect, write_script
from traincheck.instrument.walker import descriptor_api_name, find_targets

NORMAL = "torch._C.TensorBase.normal_"

# Two draws from the same seed, one through torch.nn.init, one direct; a failing add_ whose message must
# reach the script unchanged; a checksum of the results.
SAME_SEED = """
import torch
torch.manual_seed(0)
w = torch.empty(4, 3)
torch.nn.init.normal_(w, mean=0.0, std=1.0)
first = w.clone()
torch.manual_seed(0)
w.normal_(0.0, 1.0)
print("equal", torch.equal(first, w), "sum", repr(float(w.sum())), "add", repr(float(w.add(1).sum())))
try:
    w.add_(torch.ones(5))
except RuntimeError as e:
    print("error", type(e).__name__, e)
"""


def _descriptor_targets(instr_descriptors):
    return [t for t in find_targets(["torch"], False, lambda f: False, instr_descriptors=instr_descriptors)
            if t.api_name.startswith("torch._C.")]


def test_descriptor_names_are_parsed_from_the_repr_as_the_original_does():
    assert descriptor_api_name(torch._C.TensorBase.normal_) == NORMAL
    assert descriptor_api_name(tuple.count) == "tuple.count"
    assert descriptor_api_name(torch.nn.Module.train) is None  # a Python function: not a descriptor


def test_walker_finds_tensor_descriptors_once_on_torch_tensor_and_only_when_asked():
    assert _descriptor_targets(False) == []
    targets = _descriptor_targets(True)
    by_name = {t.api_name: t for t in targets}
    normal = by_name[NORMAL]
    assert normal.owner is torch.Tensor and normal.attr == "normal_" and normal.container == "method"
    assert normal.original is torch._C.TensorBase.normal_ and normal.is_bound_method
    assert {"torch._C.TensorBase.add_", "torch._C.TensorBase.copy_", "torch._C.TensorBase.uniform_"} <= set(by_name)
    # Parameter inherits the wrapper from Tensor; C types cannot be patched; only TensorBase's are dumped.
    assert {t.owner for t in targets} == {torch.Tensor}
    assert all(t.api_name.startswith("torch._C.TensorBase.") for t in targets)
    # Dunders stay type slots (the original's rule), Python overrides in torch.Tensor stay Python targets.
    assert not any(t.attr.startswith("__") for t in targets)
    assert "split" not in {t.attr for t in targets}


def _pairs(records, function):
    return [r for r in records if r["function"] == function]


def test_collect_records_descriptor_calls_with_self_and_leaves_results_identical(tmp_path):
    write_script(tmp_path, "same_seed.py", SAME_SEED)
    plain = subprocess.run([sys.executable, "same_seed.py"], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert "equal True" in plain.stdout and "error RuntimeError The size of tensor a (3)" in plain.stdout
    outputs = {}
    for name, flags in [("with", ["--instr-descriptors"]), ("without", [])]:
        result = collect(tmp_path, "-p", "same_seed.py", "--output-dir", name, *flags)
        assert result.returncode == 0, result.stderr
        outputs[name] = [line for line in result.stdout.splitlines() if line.startswith(("equal", "error"))]
    assert outputs["with"] == outputs["without"] == plain.stdout.splitlines()

    records = all_records(tmp_path / "with")
    pres = [r for r in _pairs(records, NORMAL) if r["type"] == "function_call (pre)"]
    assert len(pres) == 2 and len(_pairs(records, NORMAL)) == 4  # nn.init.normal_'s and the direct one
    for pre in pres:
        assert pre["is_bound_method"] is True and isinstance(pre["obj_id"], int)
        assert pre["args"]["0"]["torch.FloatTensor"]["shape"] == [4, 3]
    # Both calls are on `w`: the same object (obj_id, its Python id) holding the same data
    # (_TRAINCHECK_data_ID, the address of its data, not its Python id: test_tensor_identity.py).
    assert pres[0]["obj_id"] == pres[1]["obj_id"]
    data_ids = {pre["args"]["0"]["torch.FloatTensor"]["_TRAINCHECK_data_ID"] for pre in pres}
    assert len(data_ids) == 1 and pres[0]["obj_id"] not in data_ids
    assert pres[0]["args"]["1"] == {"float": 0.0} and pres[0]["kwargs"]["generator"] == {"NoneType": None}
    # nn.init.normal_ itself is a Python function, recorded around the descriptor's call.
    assert _pairs(records, "torch.nn.init.normal_")
    failed = [r for r in _pairs(records, "torch._C.TensorBase.add_") if r["type"] == "function_call (post) (exception)"]
    assert len(failed) == 1 and "must match the size" in failed[0]["exception_msg"]

    without = all_records(tmp_path / "without")
    assert not any(r["function"].startswith("torch._C.TensorBase.") for r in without)
    assert _pairs(without, "torch.nn.init.normal_")
    summary = json.loads(next((tmp_path / "with").glob("instrumentation_summary_*.json")).read_text())
    assert summary["instr_descriptors"] is True


# Each layer initialised with normal_ once (good), or the whole init applied a second time (--bug), as
# Hugging Face models did when _init_weights ran again on already initialised modules; written as theirs
# is, `weight.data.normal_(...)`, so only the C method sees it (no torch.nn.init function is called).
# std depends on the fan-in, so the good run's calls all differ.
REPEATED_INIT = """
import sys
import torch
import traincheck

seed = int(sys.argv[1])
torch.manual_seed(seed)
model = torch.nn.Sequential(torch.nn.Linear(7, 5), torch.nn.ReLU(), torch.nn.Linear(5, 3), torch.nn.ReLU(),
                            torch.nn.Linear(3, 2))

def init_weights(m):
    if isinstance(m, torch.nn.Linear):
        m.weight.data.normal_(mean=0.0, std=1.0 / m.in_features)

model.apply(init_weights)
if "--bug" in sys.argv:
    model.apply(init_weights)  # the bug: initialised again
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(16, 7), torch.randn(16, 2)
for i in range(3):
    traincheck.start_step()
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", float(loss))
"""


def _run(cmd, cwd):
    result = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def _distinct_normal(invariants_path):
    invariants = [json.loads(line) for line in invariants_path.read_text().splitlines()]
    return [i for i in invariants if i["relation"] == "DistinctArgumentRelation"
            and i["params"][0]["api_full_name"] == NORMAL]


def test_distinct_argument_on_normal_catches_repeated_initialisation_offline_and_in_process(tmp_path):
    write_script(tmp_path, "init.py", REPEATED_INIT)
    for name, args in [("good1", ["1"]), ("good2", ["2"]), ("buggy", ["3", "--bug"])]:
        result = collect(tmp_path, "-p", "init.py", "--output-dir", name, "--instr-descriptors", script_args=args)
        assert result.returncode == 0, result.stderr
    _run(["traincheck-infer", "-f", "good1", "-o", "inv.json"], tmp_path)
    learned = _distinct_normal(tmp_path / "inv.json")
    assert len(learned) == 1, "DistinctArgument on normal_ not learned from the good run"
    (tmp_path / "normal.json").write_text(json.dumps(learned[0]) + "\n")

    _run(["traincheck-check", "-f", "good2", "buggy", "-i", "normal.json", "-o", "results"], tmp_path)
    good = json.loads((tmp_path / "results" / "good2" / "violations_summary.json").read_text())
    buggy = json.loads((tmp_path / "results" / "buggy" / "violations_summary.json").read_text())
    assert good["distinct_invariants_violated"] == 0
    assert buggy["distinct_invariants_violated"] == 1
    assert buggy["violations"][0]["occurrences"] == 3  # each of the three weights initialised twice

    # Selective collection wraps the descriptor the invariant names, without --instr-descriptors, and the
    # in-process check sees the same violations while the script runs.
    result = collect(tmp_path, "-p", "init.py", "--output-dir", "selective", "-i", "normal.json",
                     script_args=["3", "--bug"])
    assert result.returncode == 0, result.stderr
    functions = {r["function"] for r in all_records(tmp_path / "selective")}
    assert functions == {NORMAL}
    failed = (tmp_path / "selective" / "online_check" / "failed.log").read_text().splitlines()
    assert len(failed) == 3 and all(NORMAL in line for line in failed)
