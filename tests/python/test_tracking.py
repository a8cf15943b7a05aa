"""Model tracking (--models-to-track): state_change records in trace_VAR files
(docs/collection.md §Model tracking, docs/formats.md §Variable state records)."""
import json
import shutil
import subprocess
import sys
import textwrap
from collections import defaultdict

import pytest

from conftest import SCRIPTS, all_records, collect, read_trace_files, write_script

PARAMS = ["model.0.weight", "model.0.bias", "model.2.weight", "model.2.bias"]


def var_records(out):
    return [r for recs in read_trace_files(out, "VAR").values() for r in recs]


def test_a_tracked_mlp_gets_a_record_per_parameter_at_start_and_after_every_step(tmp_path):
    result = collect(tmp_path, "-p", str(SCRIPTS / "mlp_adam.py"), "--output-dir", "out", "--models-to-track", "model",
                     "--model-tracker-style", "sampler", script_args=["--iters", "4"])
    assert result.returncode == 0, result.stdout + result.stderr
    records = var_records(tmp_path / "out")
    dumps = defaultdict(dict)  # (step, time) -> var name -> record: one dump, one time
    for r in records:
        assert r["type"] == "state_change" and r["var_type"] == "torch.nn.Parameter"
        assert "mode" not in r and "dump_loc" not in r  # sampler style, as the original
        dumps[(r["meta_vars"]["step"], r["time"])][r["var_name"]] = r
    # Every parameter at the start and after every step (the last dump of the step); the changes that
    # zero_grad and step make are also written within their calls, for the parameters they change.
    by_step = {}
    for (step, _time), params in sorted(dumps.items()):
        if sorted(params) == sorted(PARAMS):
            by_step[step] = params
    assert sorted(by_step) == [0, 1, 2, 3, 4]
    w = [by_step[s]["model.0.weight"]["attributes"] for s in range(5)]
    assert len({a["data"] for a in w}) == 5  # every step changes the weights
    assert w[0]["grad"] is None and all(isinstance(a["grad"], int) for a in w[1:])
    assert w[1]["shape"] == [32, 16] and w[1]["requires_grad"] is True and "_TRAINCHECK_grad_ID" in w[1]
    # The digests' own torch calls are not traced as API calls.
    assert not any(r["function"] == "torch._VariableFunctionsClass.stack" for r in all_records(tmp_path / "out"))


ZERO_GRAD_INVARIANT = {
    "text_description": "zero_grad changes grad",
    "relation": "APIContainRelation",
    "params": [
        {"param_type": "APIParam", "api_full_name": "torch.optim.optimizer.Optimizer.zero_grad"},
        {"param_type": "VarTypeParam", "var_type": "torch.nn.Parameter", "attr_name": "grad", "pre_value": "non_zero", "post_value": None},
    ],
    "precondition": {"parent_func_call_pre": {"inverted": False, "preconditions": [{"clauses": "Unconditional"}]}},
    "num_positive_examples": 3,
    "num_negative_examples": 0,
}


def test_selective_var_invariants_record_grads_around_zero_grad(tmp_path):
    (tmp_path / "inv.json").write_text(json.dumps(ZERO_GRAD_INVARIANT) + "\n")
    result = collect(tmp_path, "-p", str(SCRIPTS / "mlp_adam.py"), "--output-dir", "out", "-i", "inv.json",
                     "--models-to-track", "model", script_args=["--iters", "3"])
    assert result.returncode == 0, result.stdout + result.stderr
    api = [r for r in all_records(tmp_path / "out") if r["function"] == "torch.optim.optimizer.Optimizer.zero_grad"]
    pre3 = next(r for r in api if r["meta_vars"]["step"] == 3 and r["type"] == "function_call (pre)")
    post3 = next(r for r in api if r["meta_vars"]["step"] == 3 and r["type"] == "function_call (post)")
    states = var_records(tmp_path / "out")
    during = [r for r in states if pre3["time"] < r["time"] < post3["time"]]
    assert {r["mode"] for r in during} == {"selective-sample"}
    assert {r["dump_loc"] for r in during} == {"torch.optim.optimizer.Optimizer.zero_grad"}
    # zero_grad(set_to_none=True) cleared every grad during the call ...
    assert sorted(r["var_name"] for r in during) == sorted(PARAMS)
    assert all(r["attributes"]["grad"] is None for r in during)
    # ... that the last state written before the call still had (only changed parameters are rewritten).
    for name in PARAMS:
        last = max((r for r in states if r["var_name"] == name and r["time"] < pre3["time"]), key=lambda r: r["time"])
        assert isinstance(last["attributes"]["grad"], int), name


DDP_SCRIPT = """
import os, sys
import torch, torch.distributed as dist, torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
model = DDP(model)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
torch.manual_seed(1 + rank)
perturb_at = int(os.environ.get("PERTURB_STEP", "0"))
for step, x in enumerate(torch.randn(5, 4, 8), 1):
    optimizer.zero_grad()
    model(x).sum().backward()
    if step == perturb_at and rank == 1:  # a silent divergence, as a rank-local bug would cause
        with torch.no_grad():
            model.module[0].weight[3, 3] += 1e-3
    optimizer.step()
dist.destroy_process_group()
"""


def _ddp_digests(tmp_path, out, perturb_step):
    write_script(tmp_path, "ddp.py", DDP_SCRIPT)
    (tmp_path / "run.sh").write_text(f"torchrun --standalone --nproc_per_node=2 ddp.py\n")
    result = collect(tmp_path, "-p", "ddp.py", "-s", "run.sh", "--output-dir", out, "--models-to-track", "model",
                     "--model-tracker-style", "sampler", env={"PERTURB_STEP": str(perturb_step)}, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    files = read_trace_files(tmp_path / out, "VAR")
    assert len({r["process_id"] for recs in files.values() for r in recs}) == 2  # one file set per rank
    digests = defaultdict(dict)  # (step, var) -> rank -> data digest
    for recs in files.values():
        for r in recs:
            rank = r["meta_vars"]["_DATA_PARALLEL_RANK"]
            digests[(r["meta_vars"]["step"], r["var_name"])][rank] = r["attributes"]["data"]
    return digests


@pytest.mark.skipif(shutil.which("torchrun") is None, reason="torchrun not installed")
def test_ddp_ranks_write_their_own_files_and_agree_until_one_rank_perturbs_a_parameter(tmp_path):
    digests = _ddp_digests(tmp_path, "good", 0)
    assert {step for step, _ in digests} == {0, 1, 2, 3, 4, 5}
    for key, ranks in digests.items():
        assert set(ranks) == {0, 1} and ranks[0] == ranks[1], key

    digests = _ddp_digests(tmp_path, "bad", 2)
    weight = {step: ranks for (step, var), ranks in digests.items() if var == "model.0.weight"}
    assert all(weight[s][0] == weight[s][1] for s in (0, 1))
    assert all(weight[s][0] != weight[s][1] for s in (2, 3, 4, 5))  # from that step on


@pytest.mark.skipif(shutil.which("torchrun") is None, reason="torchrun not installed")
def test_consistency_learned_from_a_good_ddp_run_catches_the_rank_that_diverges(tmp_path):
    _ddp_digests(tmp_path, "good", 0)
    _ddp_digests(tmp_path, "bad", 2)
    for cmd in (["traincheck-infer", "-f", "good", "-o", "inv.json"],
                ["traincheck-check", "-f", "good", "bad", "-i", "inv.json", "-o", "results"]):
        result = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stdout + result.stderr
    invariants = [json.loads(line) for line in (tmp_path / "inv.json").read_text().splitlines()]
    data = [inv for inv in invariants if inv["relation"] == "ConsistencyRelation"
            and [p["attr_name"] for p in inv["params"]] == ["data", "data"]]
    assert len(data) == 1, [inv["text_description"] for inv in invariants]
    assert "not checked" not in result.stderr
    good = json.loads((tmp_path / "results" / "good" / "violations_summary.json").read_text())
    assert not any(v["relation_type"] == "ConsistencyRelation" for v in good["violations"])
    bad = json.loads((tmp_path / "results" / "bad" / "violations_summary.json").read_text())
    consistency = [v for v in bad["violations"] if v["relation_type"] == "ConsistencyRelation"]
    # Found at the perturbed step, and only between states of one step: the good run's ranks never
    # drift apart, so no negative example argues for "same step", but the learner keeps it for
    # Consistency. Without it, rank skew pairs rank 0's step-1 state with rank 1's perturbed step-2 one.
    clauses = data[0]["precondition"]["var"]["preconditions"][0]["clauses"]
    assert {"type": "consistent", "prop_name": "meta_vars.step"}.items() <= next(
        c for c in clauses if c["prop_name"] == "meta_vars.step").items(), clauses
    assert len(consistency) == 1 and consistency[0]["first_step"] == 2, bad
    offline = [e for e in json_objects((tmp_path / "results" / "bad" / "failed.log").read_text())
               if e["invariant"]["relation"] == "ConsistencyRelation"]
    assert perturbed_state_in(offline[0]["trace"])
    assert all(same_step_pairs(e["trace"]) for e in offline)

    # Online, tailing both ranks' files: the same verdict, from the same first pair.
    result = subprocess.run(["traincheck-onlinecheck", "-f", "bad", "-i", "inv.json", "-o", "live", "--exit-when-idle", "2"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    entries = [json.loads(line) for line in (tmp_path / "live" / "failed.log").read_text().splitlines()]
    online = [e for e in entries if e["invariant"]["relation"] == "ConsistencyRelation"]
    assert online and min(r["meta_vars.step"] for e in online for r in e["trace"]) == 2
    assert all(same_step_pairs(e["trace"]) for e in online)
    assert any(perturbed_state_in(e["trace"]) for e in online)


def same_step_pairs(trace):
    """Whether each violating pair of a Consistency entry's trace (records two by two) is of one step."""
    steps = [r["meta_vars.step"] for r in trace]
    return len(steps) % 2 == 0 and steps[0::2] == steps[1::2]


def json_objects(text):
    """The JSON objects of a file that holds them one after another (the checker's failed.log)."""
    decoder, at, out = json.JSONDecoder(), 0, []
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at == len(text):
            return out
        obj, at = decoder.raw_decode(text, at)
        out.append(obj)


def perturbed_state_in(records):
    """Whether a violation's records include rank 1's model.0.weight from the step it was perturbed."""
    return any(r.get("var_name") == "model.0.weight" and r.get("meta_vars._DATA_PARALLEL_RANK") == 1
               and r.get("meta_vars.step") == 2 for r in records)


MANUAL_SGD = """
import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Linear(4, 2)
for x in torch.randn(3, 5, 4):
    model.zero_grad()
    model(x).pow(2).sum().backward()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(p.grad, alpha=-0.1)
"""


def test_a_loop_updating_parameters_by_hand_is_tracked_at_each_iteration_boundary(tmp_path):
    write_script(tmp_path, "manual.py", MANUAL_SGD)
    result = collect(tmp_path, "-p", "manual.py", "--output-dir", "out", "--models-to-track", "model",
                     "--model-tracker-style", "sampler")
    assert result.returncode == 0, result.stdout + result.stderr
    weights = [r for r in var_records(tmp_path / "out") if r["var_name"] == "model.weight"]
    # At the start (step 0), then the state each iteration left (written when the next began, or at exit);
    # zero_grad's own change (grads cleared) is written within its call, with unchanged data.
    data_changes = [r["meta_vars"]["step"] for i, r in enumerate(weights)
                    if i == 0 or r["attributes"]["data"] != weights[i - 1]["attributes"]["data"]]
    assert data_changes == [0, 1, 2, 3]
    assert len({r["attributes"]["data"] for r in weights}) == 4


def test_classmethod_arguments_leave_out_cls_as_the_original_does(tmp_path):
    write_script(tmp_path, "cm.py", "import torch, torch.nn as nn\nnn.Embedding.from_pretrained(torch.ones(3, 2))\n")
    result = collect(tmp_path, "-p", "cm.py", "--output-dir", "out")
    assert result.returncode == 0, result.stdout
    pre = next(r for r in all_records(tmp_path / "out")
               if r["function"] == "torch.nn.modules.sparse.Embedding.from_pretrained" and r["type"] == "function_call (pre)")
    # The original wraps the bound classmethod: its first recorded argument is `embeddings`, not the class.
    assert "torch.FloatTensor" in pre["args"]["0"] and len(pre["args"]) == 1
    assert pre["is_bound_method"] is False and pre["obj_id"] is None


def test_classmethod_signatures_are_recorded_without_cls(tmp_path):
    write_script(tmp_path, "cm.py", "import torch, torch.nn as nn\nnn.Embedding.from_pretrained(torch.ones(3, 2))\n")
    assert collect(tmp_path, "-p", "cm.py", "--output-dir", "out").returncode == 0
    signatures = json.loads((tmp_path / "out" / "api_signatures.json").read_text())
    params = [p["name"] for p in signatures["torch.nn.modules.sparse.Embedding.from_pretrained"]["params"]]
    assert params[0] == "embeddings"


REPLACED_PARAMETER = """
import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for i, x in enumerate(torch.randn(4, 5, 4)):
    if i == 2:  # a new Parameter object takes the old one's place (as FSDP2's fully_shard does)
        model[0].weight = nn.Parameter(torch.full((3, 4), 7.0))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    optimizer.zero_grad()
    model(x).pow(2).sum().backward()
    optimizer.step()
"""


def test_a_parameter_replaced_in_its_module_is_followed_under_its_name(tmp_path):
    write_script(tmp_path, "replace.py", REPLACED_PARAMETER)
    result = collect(tmp_path, "-p", "replace.py", "--output-dir", "out", "--models-to-track", "model",
                     "--model-tracker-style", "sampler")
    assert result.returncode == 0, result.stdout + result.stderr
    weights = [r for r in var_records(tmp_path / "out") if r["var_name"] == "model.0.weight"]
    ids = [r["attributes"]["_TRAINCHECK_data_ID"] for r in weights]
    # The first parameter's states until the replacement, the new one's after it: two objects, in order.
    assert len(set(ids)) == 2 and sum(a != b for a, b in zip(ids, ids[1:])) == 1
    last_steps = {r["meta_vars"]["step"] for r in weights if r["attributes"]["_TRAINCHECK_data_ID"] == ids[-1]}
    assert max(last_steps) == 4


SPARSE_EMBEDDING = """
import torch
torch.manual_seed(0)
model = torch.nn.Embedding(50, 8, sparse=True)  # its gradient is sparse: no storage, data_ptr raises
opt = torch.optim.SparseAdam(model.parameters(), lr=0.1)
for _ in range(3):
    opt.zero_grad()
    model(torch.randint(0, 50, (16,))).pow(2).sum().backward()
    opt.step()
print("RESULT", round(float(model.weight.sum()), 5))
"""


def test_a_tracked_model_with_a_sparse_gradient_trains_as_without_the_tool(tmp_path):
    script = write_script(tmp_path, "sparse.py", SPARSE_EMBEDDING)
    plain = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True)
    assert plain.returncode == 0, plain.stderr
    result = collect(tmp_path, "-p", str(script), "--output-dir", "out", "--models-to-track", "model")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == plain.stdout.splitlines()[-1]
    states = [r for rs in read_trace_files(tmp_path / "out", "VAR").values() for r in rs]
    assert len(states) >= 4  # the weight at the start and after each of the 3 steps
