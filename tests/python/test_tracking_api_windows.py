"""Parameter changes are tied to the APIs that make them: with model tracking in full
mode, what an optimizer's step and zero_grad change is written inside their call windows, so inference
learns "Adam.step changes Parameter.data" / "zero_grad clears Parameter.grad", and an optimizer that
silently stops updating is caught at its step."""

import json
import subprocess
import textwrap

from conftest import all_records, collect, read_trace_files, write_script

TRAIN = textwrap.dedent(
    """
    import argparse
    import torch
    import torch.nn as nn

    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--freeze-lr-at", type=int, default=0, help="from this iteration on, lr is 0")
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    x, y = torch.randn(10, 4, 8), torch.randint(0, 2, (10, 4))
    for i in range(10):
        if args.freeze_lr_at and i + 1 >= args.freeze_lr_at:
            for group in optimizer.param_groups:
                group["lr"] = 0.0
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x[i]), y[i]).backward()
        optimizer.step()
    """
)

STEP = "torch.optim.adam.Adam.step"


def run_collect(tmp_path, out, *script_args):
    result = collect(tmp_path, "-p", "train.py", "--output-dir", out, "--models-to-track", "model",
                     script_args=list(script_args))
    assert result.returncode == 0, result.stdout + result.stderr


def test_parameter_changes_of_a_step_lie_inside_its_call_window(tmp_path):
    write_script(tmp_path, "train.py", TRAIN)
    run_collect(tmp_path, "out")
    api = all_records(tmp_path / "out")
    var = [r for records in read_trace_files(tmp_path / "out", "VAR").values() for r in records]
    windows = {}
    for r in api:
        if r["function"] == STEP:
            windows.setdefault(r["func_call_id"], {})[r["type"]] = r["time"]
    spans = [(w["function_call (pre)"], w["function_call (post)"]) for w in windows.values() if len(w) == 2]
    assert len(spans) == 10
    # Each step changes the data of all 4 parameters: one record each inside its window.
    for start, end in spans:
        inside = [r for r in var if start < r["time"] < end and r["attributes"].get("data") is not None]
        assert len({r["var_name"] for r in inside}) == 4


def test_an_optimizer_that_stops_updating_is_caught_at_its_step(tmp_path):
    write_script(tmp_path, "train.py", TRAIN)
    for name, args in (("good1", ["--seed", "1"]), ("good2", ["--seed", "2"]), ("good3", ["--seed", "3"]),
                       ("frozen", ["--seed", "3", "--freeze-lr-at", "6"])):
        run_collect(tmp_path, name, *args)
    subprocess.run(["traincheck-infer", "-f", "good1", "good2", "-o", "inv.json"], cwd=tmp_path, check=True,
                   capture_output=True)
    invariants = [json.loads(line) for line in open(tmp_path / "inv.json")]
    changes_data = [i for i in invariants if i["relation"] == "APIContainRelation"
                    and i["params"][0].get("api_full_name") == STEP
                    and i["params"][1].get("var_type") == "torch.nn.Parameter"
                    and i["params"][1].get("attr_name") == "data"]
    assert changes_data, "no invariant ties Adam.step to a change of Parameter.data"
    subprocess.run(["traincheck-check", "-f", "good3", "frozen", "-i", "inv.json", "-o", "res"], cwd=tmp_path,
                   check=True, capture_output=True)
    good = json.load(open(tmp_path / "res" / "good3" / "violations_summary.json"))
    frozen = json.load(open(tmp_path / "res" / "frozen" / "violations_summary.json"))
    assert good["distinct_invariants_violated"] == 0, good
    steps = [v["first_step"] for v in frozen["violations"] if STEP.rsplit(".", 2)[-2] in v["display_name"]
             and "Parameter.data" in v["display_name"]]
    assert steps and min(steps) == 6, frozen
