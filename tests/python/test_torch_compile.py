"""torch.compile'd models and optimizer steps under traincheck-collect (docs/collection.md §torch.compile):
the same results bit for bit, the same graph breaks and graphs as without the tool, and records of what
runs outside the compiled regions, numbered by step."""
import json
import subprocess
import sys
from collections import Counter, defaultdict

from conftest import SCRIPTS, all_records, collect

SCRIPT = str(SCRIPTS / "compiled_mlp.py")
ITERS = 4
# Outside the compiled regions: the loss, backward, zero_grad, and Adam.step (dynamo runs the step
# itself eagerly at the graph break torch's optimizer makes, and compiles its body as a frame of its own).
OUTSIDE = ("torch.optim.optimizer.Optimizer.zero_grad", "torch.nn.functional.cross_entropy",
           "torch._tensor.Tensor.backward", "torch.optim.adam.Adam.step")
# Inside them: compiled away, never called at run time.
INSIDE = ("torch.nn.modules.linear.Linear.forward", "torch.nn.functional.relu", "torch.optim.adam.adam")

ZERO_GRAD_ORDER = {
    "text_description": "zero_grad and step alternate",
    "relation": "FunctionLeadRelation",
    "params": [
        {"param_type": "APIParam", "api_full_name": "torch.optim.optimizer.Optimizer.zero_grad"},
        {"param_type": "APIParam", "api_full_name": "torch.optim.adam.Adam.step"},
    ],
    "precondition": {"pre_event": {"inverted": False, "preconditions": [{"clauses": "Unconditional"}]}},
    "num_positive_examples": 10,
    "num_negative_examples": 0,
}
RELU_FLOAT = {  # names a function that only runs inside the compiled model: selective mode wraps it
    "text_description": "relu returns float32",
    "relation": "ConsistentOutputRelation",
    "params": [
        {"param_type": "APIParam", "api_full_name": "torch.nn.functional.relu"},
        {"param_type": "VarTypeParam", "var_type": "torch.Tensor", "attr_name": "dtype", "const_value": "torch.float32"},
    ],
    "precondition": {"pre_event": {"inverted": False, "preconditions": [{"clauses": "Unconditional"}]}},
    "num_positive_examples": 10,
    "num_negative_examples": 0,
}


def plain_run(tmp_path, backend="aot_eager", model="mlp"):
    result_file = tmp_path / "plain.json"
    subprocess.run([sys.executable, SCRIPT, "--iters", str(ITERS), "--backend", backend, "--model", model,
                    "--result", str(result_file)], cwd=tmp_path, check=True, capture_output=True, text=True)
    return json.loads(result_file.read_text())


def collected_run(tmp_path, *extra, backend="aot_eager", model="mlp", pack=False):
    """Without -i, recording only unless `pack`: the shipped pack's model tracking hooks every optimizer
    step, and dynamo traces those hooks into a compiled step (frames of their own)."""
    result_file = tmp_path / "collected.json"
    if "-i" not in extra and not pack:
        extra = (*extra, "--no-pack")
    result = collect(tmp_path, "-p", SCRIPT, "--output-dir", "out", *extra,
                     script_args=["--iters", str(ITERS), "--backend", backend, "--model", model,
                                  "--result", str(result_file)])
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result_file.read_text()), tmp_path / "out", result


def calls_by_step(out_dir):
    steps = defaultdict(list)
    for r in all_records(out_dir):
        if r["type"] == "function_call (pre)":
            steps[r["function"]].append(r["meta_vars"]["step"])
    return steps


def test_full_instrumentation_keeps_results_graph_breaks_and_graphs_and_records_outside_compiled_regions(tmp_path):
    plain = plain_run(tmp_path)
    collected, out, _ = collected_run(tmp_path)
    assert collected["losses"] == plain["losses"] and collected["params"] == plain["params"]
    # torch's optimizer breaks the graph itself (twice here); our wrappers add none, nor frames or graphs.
    assert collected["graph_breaks"] == plain["graph_breaks"]
    assert collected["frames"] == plain["frames"] and collected["unique_graphs"] == plain["unique_graphs"]

    steps = calls_by_step(out)
    for name in OUTSIDE:
        assert steps[name] == list(range(1, ITERS + 1)), (name, steps[name])
    for name in INSIDE:
        assert name not in steps, (name, steps[name])
    # What dynamo runs while it compiles (fake tensors, decompositions) is compiler work: not recorded.
    # (Importing torch._dynamo at torch.compile() registers decompositions, before step 1: recorded.)
    compiler_work = [n for n, ss in steps.items() if max(ss) >= 1
                     and n.startswith(("torch._subclasses.meta_utils.", "torch._subclasses.fake_tensor.", "torch._decomp."))]
    assert compiler_work == []
    # Once compiled, every step makes the same calls.
    per_step = [Counter(n for n, ss in steps.items() for s in ss if s == step) for step in (2, 3)]
    assert per_step[0] == per_step[1]


def test_the_default_pack_keeps_a_compiled_programs_results(tmp_path):
    plain = plain_run(tmp_path)
    collected, out, result = collected_run(tmp_path, pack=True)
    assert collected["losses"] == plain["losses"] and collected["params"] == plain["params"]
    assert "online check: " in result.stderr and (out / "online_check").is_dir()


def test_selective_instrumentation_and_in_process_check_of_a_compiled_program(tmp_path):
    plain = plain_run(tmp_path)
    (tmp_path / "inv.json").write_text("".join(json.dumps(i) + "\n" for i in (ZERO_GRAD_ORDER, RELU_FLOAT)))
    collected, out, result = collected_run(tmp_path, "-i", "inv.json")
    assert collected["losses"] == plain["losses"] and collected["params"] == plain["params"]
    assert collected["graph_breaks"] == plain["graph_breaks"]
    assert collected["frames"] == plain["frames"] and collected["unique_graphs"] == plain["unique_graphs"]
    steps = calls_by_step(out)
    assert steps["torch.optim.optimizer.Optimizer.zero_grad"] == list(range(1, ITERS + 1))
    assert steps["torch.optim.adam.Adam.step"] == list(range(1, ITERS + 1))
    assert "torch.nn.functional.relu" not in steps  # compiled away: its invariant is not triggered
    # The call-order invariant holds and is triggered; relu's is checked but never triggered.
    assert "online check: no violation of 2 checks (1 triggered, 2 checked, 0 not checked)" in result.stderr


def test_eager_backend_keeps_results_and_graph_breaks(tmp_path):
    # backend="eager" runs dynamo's own graph (torch functions, not aten ops) at run time.
    plain = plain_run(tmp_path, backend="eager")
    collected, _, _ = collected_run(tmp_path, backend="eager")
    assert collected["losses"] == plain["losses"] and collected["params"] == plain["params"]
    assert collected["graph_breaks"] == plain["graph_breaks"] and collected["frames"] == plain["frames"]


def test_modules_whose_methods_have_defaults_compile_with_the_same_results_and_graph_breaks(tmp_path):
    # Dynamo guards the defaults of a module's forward (MultiheadAttention's, the script's own) through
    # CPython's function struct: the class must hold a function, not a binding wrapper, once compiled.
    plain = plain_run(tmp_path, model="encoder")
    collected, out, _ = collected_run(tmp_path, model="encoder")
    assert collected["losses"] == plain["losses"] and collected["params"] == plain["params"]
    assert collected["graph_breaks"] == plain["graph_breaks"] > 0
    assert collected["frames"] == plain["frames"] and collected["unique_graphs"] == plain["unique_graphs"]
    steps = calls_by_step(out)
    assert steps["torch.optim.adam.Adam.step"] == list(range(1, ITERS + 1))


def test_the_shim_swapped_in_at_a_compile_reads_as_the_original_and_is_undone():
    import inspect
    import types

    import torch
    import torch.nn as nn
    from traincheck import _core
    from traincheck.instrument import compile_support
    from traincheck.instrument.installer import CallOptions, install
    from traincheck.instrument.walker import Target

    class Scaler(nn.Module):
        def forward(self, x, scale=2.0):
            return x * scale

        def identity(self, x):
            return x

    class Alias(nn.Module):  # holds the same function: one wrapper, a shim in each class
        forward = Scaler.forward

    forward, identity = Scaler.__dict__["forward"], Scaler.__dict__["identity"]
    report = install([Target(Scaler, "forward", forward, "t.Scaler.forward", "method", False),
                      Target(Scaler, "identity", identity, "t.Scaler.identity", "method", False),
                      Target(Alias, "forward", forward, "t.Scaler.forward", "method", False)],
                     lambda name: CallOptions())
    assert [(p.owner, p.attr) for p in report.pending_shims] == [(Scaler, "forward"), (Scaler, "identity"),
                                                                   (Alias, "forward")]
    assert compile_support.swap_in_shims(_core, report) == 3 and report.pending_shims == []
    assert Alias()(torch.ones(1)).item() == 2.0
    shim = Scaler.__dict__["forward"]
    assert type(shim) is types.FunctionType and shim.__defaults__ is None
    assert inspect.signature(shim) == inspect.signature(forward) and shim.__qualname__ == forward.__qualname__
    assert Scaler()(torch.ones(1)).item() == 2.0 and Scaler().forward(torch.ones(1), scale=3.0).item() == 3.0
    Scaler.identity = identity  # replaced by the user meanwhile: a later swap leaves it alone
    report.pending_shims.append(compile_support.PendingShim(Scaler, "identity", object(), identity, "t", {}))
    assert compile_support.swap_in_shims(_core, report) == 0 and Scaler.__dict__["identity"] is identity
    report.uninstall()
    assert Scaler.__dict__["forward"] is forward and Scaler.__dict__["identity"] is identity
    assert Alias.__dict__["forward"] is forward
