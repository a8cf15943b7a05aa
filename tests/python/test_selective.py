"""Selective instrumentation from invariant files in the original's format
(docs/collection.md §Selective instrumentation, docs/formats.md §Invariant files)."""
import json

from conftest import SCRIPTS, all_records, collect

# Written as the original writes invariants (one JSON object per line, its param and clause spellings).
ORIGINAL_FORMAT_INVARIANTS = [
    {
        "text_description": "Adam.step contains adam",
        "relation": "APIContainRelation",
        "params": [
            {"param_type": "APIParam", "api_full_name": "torch.optim.adam.Adam.step"},
            {"param_type": "APIParam", "api_full_name": "torch.optim.adam.adam"},
        ],
        "precondition": {"parent_func_call_pre": {"inverted": False, "preconditions": [{"clauses": "Unconditional"}]}},
        "num_positive_examples": 20,
        "num_negative_examples": 0,
    },
    {
        "text_description": "zero_grad changes grad",
        "relation": "APIContainRelation",
        "params": [
            {"param_type": "APIParam", "api_full_name": "torch.optim.optimizer.Optimizer.zero_grad"},
            {"param_type": "VarTypeParam", "var_type": "torch.nn.Parameter", "attr_name": "grad", "pre_value": "non_zero", "post_value": None},
        ],
        "precondition": {"parent_func_call_pre": {"inverted": True, "preconditions": [
            {"clauses": [{"type": "constant", "prop_name": "meta_vars.step", "additional_path": "None", "prop_dtype": "int", "values": [0]}]}]}},
        "num_positive_examples": 20,
        "num_negative_examples": 1,
    },
    {
        "text_description": "relu output dtype",
        "relation": "ConsistentOutputRelation",
        "params": [
            {"param_type": "APIParam", "api_full_name": "torch.nn.functional.relu"},
            {"param_type": "VarTypeParam", "var_type": "torch.Tensor", "attr_name": "dtype", "const_value": "torch.float32"},
        ],
        "precondition": {"pre_event": {"inverted": False, "preconditions": [{"clauses": "Unconditional"}]}},
        "num_positive_examples": 5,
        "num_negative_examples": 0,
    },
    {
        "text_description": "an API this torch does not have",
        "relation": "FunctionLeadRelation",
        "params": [
            {"param_type": "APIParam", "api_full_name": "torch.nn.modules.module.Module.eval"},
            {"param_type": "APIParam", "api_full_name": "torch.optim.not_an_optimizer.Nope.step"},
        ],
        "precondition": {"func_lead": {"inverted": False, "preconditions": [{"clauses": "Unconditional"}]}},
        "num_positive_examples": 2,
        "num_negative_examples": 0,
    },
]


def write_invariants(path, invariants):
    path.write_text("".join(json.dumps(inv) + "\n" for inv in invariants))


def test_selective_mode_records_only_the_apis_the_invariants_name(tmp_path):
    write_invariants(tmp_path / "inv.json", ORIGINAL_FORMAT_INVARIANTS)
    result = collect(
        tmp_path, "-p", str(SCRIPTS / "mlp_adam.py"), "-i", "inv.json", "--output-dir", "out",
        "--sampling-interval", "1", "--warm-up-steps", "1", script_args=["--iters", "3"],
    )
    assert result.returncode == 0, result.stderr
    records = all_records(tmp_path / "out")
    named = {"torch.optim.adam.Adam.step", "torch.optim.adam.adam", "torch.optim.optimizer.Optimizer.zero_grad",
             "torch.nn.functional.relu", "torch.nn.modules.module.Module.eval"}
    functions = {r["function"] for r in records}
    assert functions <= named
    assert {"torch.optim.adam.Adam.step", "torch.optim.adam.adam", "torch.nn.functional.relu"} <= functions
    # Contained-call checks need the parent's pre-record only; ConsistentOutput needs relu's result.
    relu_post = [r for r in records if r["function"] == "torch.nn.functional.relu" and r["type"] == "function_call (post)"]
    assert relu_post and all("return_values" in r for r in relu_post)
    assert all("args" not in r for r in records if r["function"] == "torch.optim.adam.Adam.step")


def test_selective_mode_writes_instr_opts_and_reports_what_it_resolved(tmp_path):
    write_invariants(tmp_path / "inv.json", ORIGINAL_FORMAT_INVARIANTS)
    result = collect(tmp_path, "-p", str(SCRIPTS / "mlp_adam.py"), "-i", "inv.json", "--output-dir", "out", script_args=["--iters", "2"])
    assert result.returncode == 0, result.stderr
    opts = json.loads((tmp_path / "out" / "instr_opts.json").read_text())
    funcs = opts["funcs_instr_opts"]
    assert funcs["torch.nn.functional.relu"]["dump_ret"] is True
    assert funcs["torch.optim.optimizer.Optimizer.zero_grad"]["var_types_to_track"] == {"torch.nn.Parameter": {"dump_unchanged": False}}
    assert set(funcs["torch.optim.adam.Adam.step"]) >= {"scan_proxy_in_args", "dump_args", "dump_ret", "var_types_to_track"}
    assert "selective: 3 of 4 invariants, 5 of 6 APIs resolved in torch 2.13" in result.stderr
    assert "warning: API not found in this library version: torch.optim.not_an_optimizer.Nope.step" in result.stderr
    env = (tmp_path / "out" / "env_dump.txt").read_text()
    assert "sampling_interval: 1\n" in env and "warm_up_steps: 1\n" in env  # every step, -i included


def test_a_malformed_invariant_file_is_an_error_naming_file_and_line(tmp_path):
    lines = [json.dumps(ORIGINAL_FORMAT_INVARIANTS[0]), '{"relation": "APIContainRelation", "params": [{"param_type": "Bogus"}]}']
    (tmp_path / "bad.json").write_text("\n".join(lines) + "\n")
    result = collect(tmp_path, "-p", str(SCRIPTS / "mlp_adam.py"), "-i", "bad.json", "--output-dir", "out")
    assert result.returncode == 2
    assert "bad.json:2: field 'params[0].param_type'" in result.stderr
    (tmp_path / "broken.json").write_text('{"relation": \n')
    result = collect(tmp_path, "-p", str(SCRIPTS / "mlp_adam.py"), "-i", "broken.json", "--output-dir", "out")
    assert result.returncode == 2 and "broken.json:1: invalid JSON" in result.stderr


def test_context_managers_that_preconditions_name_are_recorded_with_their_init_arguments(tmp_path):
    from traincheck.instrument.selective import build_plan

    manager = "torch.amp.autocast_mode.autocast"
    inv = dict(ORIGINAL_FORMAT_INVARIANTS[2])
    inv["precondition"] = {"pre_event": {"inverted": False, "preconditions": [{"clauses": [
        {"type": "exist", "prop_name": f"meta_vars.context_managers.{manager}", "additional_path": "None", "prop_dtype": "None"}]}]}}
    write_invariants(tmp_path / "inv.json", [inv, ORIGINAL_FORMAT_INVARIANTS[0]])
    plan = build_plan([str(tmp_path / "inv.json")])
    assert {f"{manager}.__init__", f"{manager}.__enter__", f"{manager}.__exit__"} <= set(plan.funcs)
    init = plan.options_for(f"{manager}.__init__")
    assert init.dump_args and init.arg_names is None  # every argument: preconditions may read any
    # They serve the invariant; they are not APIs it is about.
    assert [i.apis for i in plan.invariants] == [["torch.nn.functional.relu"], ["torch.optim.adam.Adam.step", "torch.optim.adam.adam"]]
    # Without such a clause, nothing extra.
    write_invariants(tmp_path / "plain.json", [ORIGINAL_FORMAT_INVARIANTS[2]])
    assert set(build_plan([str(tmp_path / "plain.json")]).funcs) == {"torch.nn.functional.relu"}


def test_selective_mode_records_and_checks_every_step_by_default(tmp_path):
    """No sampling unless asked for: with the original's default (warm-up 10, every 10th step), in-process
    checks waited for a sampled step and judged call orders across steps never recorded."""
    write_invariants(tmp_path / "inv.json", ORIGINAL_FORMAT_INVARIANTS)
    result = collect(tmp_path, "-p", str(SCRIPTS / "mlp_adam.py"), "-i", "inv.json", "--output-dir", "out",
                     script_args=["--iters", "14"])
    assert result.returncode == 0, result.stderr
    steps = {r["meta_vars"]["step"] for r in all_records(tmp_path / "out") if r["function"] == "torch.optim.adam.Adam.step"}
    assert steps == set(range(1, 15))
