"""Online checking: in-process during traincheck-collect -i (the recorder's writer thread feeds the checker
in traincheck._online), and the traincheck-onlinecheck command that tails a trace folder."""
import json
import subprocess

from conftest import SCRIPTS, collect

INVARIANT = {
    "text_description": "Adam.step contains _single_tensor_adam",
    "relation": "APIContainRelation",
    "params": [
        {"param_type": "APIParam", "api_full_name": "torch.optim.adam.Adam.step"},
        {"param_type": "APIParam", "api_full_name": "torch.optim.adam._single_tensor_adam"},
    ],
    "precondition": {"parent_func_call_pre": {"inverted": False, "preconditions": [{"clauses": "Unconditional"}]}},
    "num_positive_examples": 10,
    "num_negative_examples": 0,
}

# At step 4 the gradients are dropped before the update: Adam.step has nothing to update and never
# reaches _single_tensor_adam.
BUG = """    if len(times) == 3:
        optimizer.zero_grad()
    optimizer.step()
"""

# Appended to the script: what the training process itself can see before it exits.
PROBE = """
import os, sys, time
deadline = time.monotonic() + 5
while time.monotonic() < deadline and not (os.path.exists("online_check/failed.log") and os.path.getsize("online_check/failed.log")):
    time.sleep(0.05)
seen = os.path.exists("online_check/failed.log") and os.path.getsize("online_check/failed.log") > 0
print("violation seen while running:", seen)
print("online module loaded:", "traincheck._online" in sys.modules)
"""


def scripts(tmp_path):
    good = (SCRIPTS / "mlp_adam.py").read_text()
    assert "    optimizer.step()\n" in good
    (tmp_path / "good.py").write_text(good + PROBE)
    (tmp_path / "buggy.py").write_text(good.replace("    optimizer.step()\n", BUG) + PROBE)
    (tmp_path / "inv.json").write_text(json.dumps(INVARIANT) + "\n")


def collect_run(tmp_path, script, out, *extra):
    result = collect(tmp_path, "-p", script, "-i", "inv.json", "--output-dir", out, *extra, script_args=["--iters", "6"])
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def failed_entries(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def run(cmd, cwd):
    result = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def test_in_process_check_of_a_good_run_finds_nothing(tmp_path):
    scripts(tmp_path)
    result = collect_run(tmp_path, "good.py", "good")
    online = tmp_path / "good" / "online_check"
    assert (online / "failed.log").read_text() == ""
    assert (online / "report.html").exists() and (online / "invariants.json").exists()
    assert "online module loaded: True" in result.stdout
    assert "traincheck-collect: online check: no violation of 1 checks (1 triggered, 1 checked, 0 not checked)" in result.stderr
    assert result.stderr.count("online check:") == 1  # one summary, at exit
    assert "first step" not in result.stderr  # no violation table when nothing was violated


def test_in_process_check_reports_the_buggy_step_while_training_runs_as_the_offline_check_does(tmp_path):
    scripts(tmp_path)
    result = collect_run(tmp_path, "buggy.py", "buggy")
    # Known inside the training process, before it exited: the writer thread appended it.
    assert "violation seen while running: True" in result.stdout
    entries = failed_entries(tmp_path / "buggy" / "online_check" / "failed.log")
    assert len(entries) == 1
    entry = entries[0]
    assert entry["violated_id"] == 0 and entry["check_passed"] is False and isinstance(entry["detection_time"], int)
    assert entry["invariant"]["text_description"] == INVARIANT["text_description"]
    [record] = entry["trace"]
    assert record["function"] == "torch.optim.adam.Adam.step" and record["type"] == "function_call (pre)"
    assert record["meta_vars.step"] == 4
    assert "online check: 1 violations of 1 invariants (1 triggered, 1 checked, 0 not checked)" in result.stderr
    # Then the per-invariant table: first step, last step, count.
    table = result.stderr[result.stderr.index("online check:"):].splitlines()[1:]
    assert table[0].split() == ["first", "step", "last", "step", "violations", "invariant"]
    assert table[1].split()[:3] == ["4", "4", "1"]

    # The offline checker on the trace this same run wrote gives the same verdict.
    run(["traincheck-check", "-f", "buggy", "-i", "inv.json", "-o", "offline"], tmp_path)
    summary = json.loads((tmp_path / "offline" / "buggy" / "violations_summary.json").read_text())
    assert [(v["first_step"], v["last_step"], v["occurrences"]) for v in summary["violations"]] == [(4, 4, 1)]
    offline = failed_entries_indented(tmp_path / "offline" / "buggy" / "failed.log")
    assert [(r["func_call_id"], r["meta_vars.step"]) for e in offline for r in e["trace"]] == [
        (record["func_call_id"], record["meta_vars.step"])
    ]


def failed_entries_indented(path):
    """The offline failed.log: indent-4 objects; split where a line starts with '{' (as the original reads it)."""
    text, entries, current = path.read_text(), [], []
    for line in text.splitlines():
        if line.startswith("{") and current:
            entries.append(json.loads("\n".join(current)))
            current = []
        current.append(line)
    if current and "".join(current).strip():
        entries.append(json.loads("\n".join(current)))
    return entries


def test_no_online_check_leaves_the_checker_out_of_the_training_process(tmp_path):
    scripts(tmp_path)
    result = collect_run(tmp_path, "buggy.py", "off", "--no-online-check")
    assert not (tmp_path / "off" / "online_check").exists()
    assert "online module loaded: False" in result.stdout
    assert "online check:" not in result.stderr
    # The YAML config key is the flag's name.
    (tmp_path / "cfg.yml").write_text("pyscript: buggy.py\ninvariants: [inv.json]\nno_online_check: true\noutput_dir: cfg\n")
    result = collect(tmp_path, "--use-config", "--config", "cfg.yml", script_args=["--iters", "2"])
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "cfg" / "online_check").exists()


def test_traincheck_onlinecheck_on_a_collected_folder_finds_what_traincheck_check_finds(tmp_path):
    scripts(tmp_path)
    collect_run(tmp_path, "buggy.py", "buggy", "--no-online-check")
    result = run(["traincheck-onlinecheck", "-f", "buggy", "-i", "inv.json", "-o", "oc", "--exit-when-idle", "1",
                  "--report-interval-seconds", "0.5"], tmp_path)
    [log] = list(tmp_path.glob("traincheck_onlinechecker_*_relation_first_False.log"))
    lines = log.read_text().splitlines()
    for verbatim in ("Checker stopped", "Total 1 violations found", "Total 1 invariants violated:"):
        assert verbatim in lines, result.stderr
    assert (tmp_path / "oc" / "report.html").exists() and (tmp_path / "oc" / "invariants.json").exists()
    online = failed_entries(tmp_path / "oc" / "failed.log")

    run(["traincheck-check", "-f", "buggy", "-i", "inv.json", "-o", "offline"], tmp_path)
    offline = failed_entries_indented(tmp_path / "offline" / "buggy" / "failed.log")
    key = lambda entries: sorted((e["invariant"]["text_description"], r["func_call_id"], r["meta_vars.step"]) for e in entries for r in e["trace"])
    assert key(online) == key(offline) and len(online) == 1


ORDER_INVARIANT = {
    "text_description": "zero_grad is followed by a call of Adam.step before its next call",
    "relation": "FunctionLeadRelation",
    "params": [
        {"param_type": "APIParam", "api_full_name": "torch.optim.optimizer.Optimizer.zero_grad"},
        {"param_type": "APIParam", "api_full_name": "torch.optim.adam.Adam.step"},
    ],
    "precondition": {"func_lead": {"inverted": False, "preconditions": [{"clauses": "Unconditional"}]}},
    "num_positive_examples": 10,
    "num_negative_examples": 0,
}


def test_in_process_check_of_a_call_order_invariant_finds_the_extra_zero_grad_as_offline(tmp_path):
    scripts(tmp_path)
    (tmp_path / "inv.json").write_text(json.dumps(ORDER_INVARIANT) + "\n")
    result = collect_run(tmp_path, "buggy.py", "buggy")
    assert "online check: 1 violations of 1 invariants (1 triggered, 1 checked, 0 not checked)" in result.stderr
    [entry] = failed_entries(tmp_path / "buggy" / "online_check" / "failed.log")
    # The second zero_grad() of step 4, then the one that opened the window it closed.
    assert [(r["function"], r["meta_vars.step"]) for r in entry["trace"]] == [
        ("torch.optim.optimizer.Optimizer.zero_grad", 4), ("torch.optim.optimizer.Optimizer.zero_grad", 4)]

    run(["traincheck-check", "-f", "buggy", "-i", "inv.json", "-o", "offline"], tmp_path)
    offline = failed_entries_indented(tmp_path / "offline" / "buggy" / "failed.log")
    assert [r["func_call_id"] for e in offline for r in e["trace"]] == [r["func_call_id"] for r in entry["trace"]]


AUTOCAST = "torch.amp.autocast_mode.autocast"
AUTOCAST_INVARIANT = {
    "text_description": "relu returns bfloat16 under autocast",
    "relation": "ConsistentOutputRelation",
    "params": [
        {"param_type": "APIParam", "api_full_name": "torch.nn.functional.relu"},
        {"param_type": "VarTypeParam", "var_type": "torch.Tensor", "attr_name": "dtype", "const_value": "torch.bfloat16"},
    ],
    "precondition": {"pre_event": {"inverted": False, "preconditions": [{"clauses": [
        {"type": "constant", "prop_name": f"meta_vars.context_managers.{AUTOCAST}", "additional_path": ["dtype"],
         "prop_dtype": "str", "values": ["torch.bfloat16"]},
        {"type": "exist", "prop_name": f"meta_vars.context_managers.{AUTOCAST}", "additional_path": "None",
         "prop_dtype": "None"}]}]}},
    "num_positive_examples": 10,
    "num_negative_examples": 10,
}

# relu under CPU autocast returns bfloat16 when its input comes from an autocast linear; at step 4 (the
# fourth iteration: steps count optimizer.step() calls from 1) it is
# given a float32 tensor instead. The relu outside autocast (float32) is not under the precondition.
AUTOCAST_SCRIPT = """
import torch
import torch.nn.functional as F
torch.manual_seed(0)
lin = torch.nn.Linear(8, 8)
optimizer = torch.optim.SGD(lin.parameters(), lr=0.1)
x = torch.randn(4, 8)
for i in range(6):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        h = lin(x)
        y = F.relu(h.float() if i == 3 else h)
    loss = F.relu(lin(x)).sum() + y.float().sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


def test_in_process_check_sees_the_context_managers_preconditions_name(tmp_path):
    (tmp_path / "amp.py").write_text(AUTOCAST_SCRIPT)
    (tmp_path / "inv.json").write_text(json.dumps(AUTOCAST_INVARIANT) + "\n")
    result = collect(tmp_path, "-p", "amp.py", "-i", "inv.json", "--output-dir", "amp")
    assert result.returncode == 0, result.stdout + result.stderr
    # Selective mode records the manager the precondition names, so the clause can hold.
    functions = {json.loads(line)["function"] for path in (tmp_path / "amp").glob("trace_API_*.log")
                 for line in path.read_text().splitlines() if line.strip()}
    assert {f"{AUTOCAST}.__init__", f"{AUTOCAST}.__enter__", f"{AUTOCAST}.__exit__"} <= functions
    assert "online check: 1 violations of 1 invariants (1 triggered, 1 checked, 0 not checked)" in result.stderr
    [entry] = failed_entries(tmp_path / "amp" / "online_check" / "failed.log")
    assert {r["meta_vars.step"] for r in entry["trace"]} == {4}

    run(["traincheck-check", "-f", "amp", "-i", "inv.json", "-o", "offline"], tmp_path)
    summary = json.loads((tmp_path / "offline" / "amp" / "violations_summary.json").read_text())
    assert [(v["first_step"], v["occurrences"]) for v in summary["violations"]] == [(4, 1)]


SEED_INVARIANT = {
    "text_description": "torch.random.manual_seed is followed by a call of torch.random.initial_seed before its next call",
    "relation": "FunctionLeadRelation",
    "params": [
        {"param_type": "APIParam", "api_full_name": "torch.random.manual_seed"},
        {"param_type": "APIParam", "api_full_name": "torch.random.initial_seed"},
    ],
    "precondition": {"func_lead": {"inverted": False, "preconditions": [{"clauses": "Unconditional"}]}},
    "num_positive_examples": 3,
    "num_negative_examples": 0,
}

# Each DataLoader worker (a forked process) is seeded once by torch (manual_seed), then by the script's
# worker_init_fn: correct, from torch.initial_seed(); with --bug, from a fixed seed, so the workers never
# ask torch for theirs. The trainer seeds torch and asks for the seed too, so it passes in both variants.
WORKER_SEED_SCRIPT = """
import sys
import torch
from torch.utils.data import DataLoader, TensorDataset

BUG = "--bug" in sys.argv


def seed_worker(worker_id):
    seed = 1234 if BUG else torch.initial_seed() % 2 ** 32
    torch.utils.data.get_worker_info().dataset.seed = seed


torch.manual_seed(0)
print("trainer seed", torch.initial_seed())
data = TensorDataset(torch.randn(16, 4), torch.randn(16, 1))
loader = DataLoader(data, batch_size=4, num_workers=2, worker_init_fn=seed_worker)
lin = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(lin.parameters(), lr=0.1)
for x, y in loader:
    loss = ((lin(x) - y) ** 2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


def test_in_process_check_covers_dataloader_worker_processes_as_the_offline_check_does(tmp_path):
    """A fork child checks its own records with a checker of its own and closes it when multiprocessing
    ends it; a thread's only call of the leader is judged when its process ends, as offline."""
    (tmp_path / "workers.py").write_text(WORKER_SEED_SCRIPT)
    (tmp_path / "inv.json").write_text(json.dumps(SEED_INVARIANT) + "\n")
    for out, extra in (("good", []), ("buggy", ["--bug"])):
        result = collect(tmp_path, "-p", "workers.py", "-i", "inv.json", "--output-dir", out, script_args=extra, timeout=None)
        assert result.returncode == 0, result.stdout + result.stderr

    trainer_pid = lambda out: int(next((tmp_path / out).glob("instrumentation_summary_*.json")).stem.rsplit("_", 1)[1])
    # Every process of the run, the workers included, closed a checker of its own.
    for out in ("good", "buggy"):
        summaries = sorted((tmp_path / out / "online_check").glob("summary_*.json"))
        assert len(summaries) == 3, summaries
        assert not list((tmp_path / out).glob("traincheck_recorder_*.log"))  # no worker ran unchecked
    assert (tmp_path / "good" / "online_check" / "failed.log").read_text() == ""

    online = failed_entries(tmp_path / "buggy" / "online_check" / "failed.log")
    assert len(online) == 2  # one per worker: its manual_seed, never followed by initial_seed
    pids = {r["process_id"] for e in online for r in e["trace"]}
    assert len(pids) == 2 and trainer_pid("buggy") not in pids
    assert {r["function"] for e in online for r in e["trace"]} == {"torch.random.manual_seed"}

    # The offline check of the trace this same run wrote: the same violations, the same records.
    run(["traincheck-check", "-f", "buggy", "good", "-i", "inv.json", "-o", "offline"], tmp_path)
    offline = failed_entries_indented(tmp_path / "offline" / "buggy" / "failed.log")
    key = lambda entries: sorted(r["func_call_id"] for e in entries for r in e["trace"])
    assert key(online) == key(offline)
    assert (tmp_path / "offline" / "good" / "failed.log").read_text().strip() == ""
