"""Full instrumentation: what the trace files hold
(docs/formats.md §API records, §Argument and return values)."""
import subprocess
import sys
from collections import defaultdict

from conftest import SCRIPTS, all_records, collect, read_trace_files

PRE, POST, EXC = "function_call (pre)", "function_call (post)", "function_call (post) (exception)"
API_KEYS = {"func_call_id", "thread_id", "process_id", "meta_vars", "type", "function", "is_bound_method", "obj_id", "time"}


def run_mlp(tmp_path, *extra):
    result = collect(tmp_path, "-p", str(SCRIPTS / "mlp_adam.py"), "--output-dir", "out", *extra, script_args=["--iters", "4"])
    assert result.returncode == 0, result.stdout + result.stderr
    return result, tmp_path / "out"


def test_every_record_has_the_original_keys_and_pre_post_pair_up(tmp_path):
    _, out = run_mlp(tmp_path)
    records = all_records(out)
    assert len(records) > 100
    by_id = defaultdict(list)
    for r in records:
        assert API_KEYS <= set(r), r
        assert r["type"] in (PRE, POST, EXC)
        by_id[r["func_call_id"]].append(r)
    for call_id, pair in by_id.items():
        assert [r["type"] for r in pair][0] == PRE, call_id
        assert len(pair) == 2, pair
        pre, post = pair
        assert post["type"] in (POST, EXC)
        assert pre["function"] == post["function"] and pre["time"] <= post["time"]
        assert pre["obj_id"] == post["obj_id"]


def test_records_of_each_file_are_time_ordered_by_post_and_nested_calls_lie_inside(tmp_path):
    _, out = run_mlp(tmp_path)
    files = read_trace_files(out)
    assert files, f"no trace_API_*.log in {out}: the loop below would check nothing"
    for records in files.values():
        assert records
        times = [r["time"] for r in records]
        assert times == sorted(times)
        assert len({(r["process_id"], r["thread_id"]) for r in records}) == 1


def _calls(records):
    pres = {r["func_call_id"]: r for r in records if r["type"] == PRE}
    return [(pres[r["func_call_id"]], r) for r in records if r["type"] != PRE]


def test_adam_step_contains_the_optimizer_functions_of_this_torch_version(tmp_path):
    _, out = run_mlp(tmp_path)
    records = all_records(out)
    calls = _calls(records)
    steps = [(pre, post) for pre, post in calls if pre["function"] == "torch.optim.adam.Adam.step"]
    assert len(steps) == 4
    pre, post = steps[1]
    inside = {p["function"] for p, q in calls if pre["time"] < p["time"] and q["time"] < post["time"]}
    assert "torch.optim.adam.adam" in inside
    # CPU runs take the single-tensor path; CUDA the foreach one: accept the implementation torch picked.
    assert {"torch.optim.adam._single_tensor_adam", "torch.optim.adam._multi_tensor_adam"} & inside
    assert "torch.optim.optimizer.Optimizer.zero_grad" not in inside


def test_meta_vars_count_steps_from_one_in_the_training_stage(tmp_path):
    _, out = run_mlp(tmp_path)
    records = all_records(out)
    steps = [r for r in records if r["function"] == "torch.optim.adam.Adam.step" and r["type"] == PRE]
    assert [r["meta_vars"]["step"] for r in steps] == [1, 2, 3, 4]
    assert all(r["meta_vars"]["stage"] == "training" for r in steps)
    inits = [r for r in records if r["function"] == "torch.nn.modules.linear.Linear.__init__"]
    assert inits and all(r["meta_vars"] == {"step": 0, "stage": "init"} for r in inits)


def test_tensor_arguments_and_results_carry_their_attributes(tmp_path):
    _, out = run_mlp(tmp_path)
    records = all_records(out)
    linear = next(r for r in records if r["function"] == "torch.nn.modules.linear.Linear.forward" and r["type"] == PRE)
    assert linear["is_bound_method"] is True and isinstance(linear["obj_id"], int)
    assert linear["args"]["0"] == {"torch.nn.modules.linear.Linear": {"training": True}}
    tensor = linear["args"]["1"]["torch.FloatTensor"]
    assert tensor["shape"] == [8, 16] and tensor["dtype"] == "torch.float32" and tensor["ndim"] == 2
    assert tensor["nbytes"] == 8 * 16 * 4 and tensor["is_cpu"] is True and tensor["requires_grad"] is False
    randn = next(r for r in records if r["function"] == "torch._VariableFunctionsClass.randn" and r["type"] == POST)
    assert "torch.FloatTensor" in randn["return_values"]


def test_printed_losses_are_identical_with_and_without_the_tool(tmp_path):
    result, _ = run_mlp(tmp_path)
    plain = subprocess.run(
        [sys.executable, str(SCRIPTS / "mlp_adam.py"), "--iters", "4"], capture_output=True, text=True, check=True
    )
    losses = [line for line in result.stdout.splitlines() if line.startswith("loss")]
    assert len(losses) == 4
    assert losses == [line for line in plain.stdout.splitlines() if line.startswith("loss")]


def test_cnn_with_sgd_records_conv_forward_and_sgd_step(tmp_path):
    result = collect(tmp_path, "-p", str(SCRIPTS / "cnn_sgd.py"), "--output-dir", "out", script_args=["--iters", "3"])
    assert result.returncode == 0, result.stderr
    functions = {r["function"] for r in all_records(tmp_path / "out")}
    assert {"torch.nn.modules.conv.Conv2d.forward", "torch.optim.sgd.SGD.step", "torch.nn.functional.cross_entropy"} <= functions


MODE_SCRIPT = """
import torch
model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
x = torch.randn(2, 4)
for step in range(2):
    model(x).sum().backward()
model.eval()
with torch.no_grad():
    model(x)
"""


def test_module_arguments_carry_their_training_mode(tmp_path):
    # A module's mode is what shows a model left in eval mode (docs/formats.md §Argument and return values).
    script = tmp_path / "modes.py"
    script.write_text(MODE_SCRIPT)
    result = collect(tmp_path, "-p", str(script), "--output-dir", "out")
    assert result.returncode == 0, result.stdout + result.stderr
    forwards = [r for r in all_records(tmp_path / "out") if r["type"] == PRE and r["function"] == "torch.nn.modules.linear.Linear.forward"]
    modes = [r["args"]["0"] for r in forwards]
    assert modes == [{"torch.nn.modules.linear.Linear": {"training": True}}] * 2 + [{"torch.nn.modules.linear.Linear": {"training": False}}]
    seq = next(r for r in all_records(tmp_path / "out") if r["type"] == PRE and r["function"] == "torch.nn.modules.container.Sequential.forward")
    assert seq["args"]["0"] == {"torch.nn.modules.container.Sequential": {"training": True}}


SUMMARIES = """
import torch

class Marked(torch.Tensor):  # a subclass: its attributes are read by ordinary attribute access
    pass

p = torch.nn.Parameter(torch.ones(2, 3))
p.grad = torch.zeros(2, 3)
hidden = p * 2.0  # not a leaf: a grad_fn, no grad
frozen = torch.ones(5, dtype=torch.float16)
marked = torch.ones(4).as_subclass(Marked).requires_grad_()
kept = p * 3.0
kept.retain_grad()
kept.sum().backward()  # a non-leaf that retains its grad: it has one now
meta = torch.empty(2, device="meta")
for t in (p, hidden, frozen, marked, kept, meta):
    torch.add(t, 1)
"""


def test_tensor_summaries_of_plain_parameter_and_subclass_tensors_hold_what_python_reads(tmp_path):
    from conftest import write_script

    script = write_script(tmp_path, "summaries.py", SUMMARIES)
    result = collect(tmp_path, "-p", str(script), "--output-dir", "out")
    assert result.returncode == 0, result.stderr[-2000:]
    adds = [r for r in all_records(tmp_path / "out") if r["function"] == "torch._VariableFunctionsClass.add" and r["type"] == PRE]
    summaries = [next(iter(r["args"]["0"].values())) for r in adds]
    assert len(summaries) == 6
    param, hidden, frozen, marked, kept, meta = summaries
    assert param["requires_grad"] is True and param["is_leaf"] is True and "_TRAINCHECK_grad_ID" in param
    assert param["grad_fn"] is None and param["shape"] == [2, 3] and param["dtype"] == "torch.float32"
    assert param["retains_grad"] is False and param["is_cuda"] is False and param["is_meta"] is False
    assert hidden["is_leaf"] is False and "grad_fn" not in hidden and hidden["grad"] is None and hidden["requires_grad"] is True
    assert frozen["requires_grad"] is False and frozen["dtype"] == "torch.float16" and frozen["itemsize"] == 2
    assert frozen["is_cpu"] is True and frozen["is_cuda"] is False and frozen["shape"] == [5]
    assert marked["requires_grad"] is True and marked["is_leaf"] is True and marked["shape"] == [4]
    assert kept["is_leaf"] is False and kept["retains_grad"] is True and "_TRAINCHECK_grad_ID" in kept
    assert "grad_fn" not in kept
    assert meta["is_meta"] is True and meta["is_cpu"] is False and meta["is_cuda"] is False
