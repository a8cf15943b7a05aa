"""Calls made under torch.compile: their callees may run as compiled graphs, unrecorded, so their records
say `"compiled": true` and APIContain neither learns from them nor judges them."""
import json
import subprocess
import textwrap

from conftest import collect, read_trace_files, write_script

COMPILED_STEP = """
import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)

@torch.compile
def compiled_step():
    opt.step()

x, y = torch.randn(32, 8), torch.randint(0, 2, (32,))
for i in range(8):
    opt.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step() if i < 4 else compiled_step()
"""

STEP = "torch.optim.adam.Adam.step"


def _step_pres(out):
    return [r for recs in read_trace_files(out).values() for r in recs
            if r["function"] == STEP and r["type"] == "function_call (pre)"]


def test_calls_under_torch_compile_are_marked_and_not_judged_by_containment(tmp_path):
    write_script(tmp_path, "compiled_step.py", textwrap.dedent(COMPILED_STEP))
    proc = collect(tmp_path, "-p", "compiled_step.py", "--output-dir", "out", "--no-pack")
    assert proc.returncode == 0, proc.stderr
    pres = sorted(_step_pres(tmp_path / "out"), key=lambda r: r["time"])
    assert [r.get("compiled", False) for r in pres] == [False] * 4 + [True] * 4

    infer = subprocess.run(["traincheck-infer", "-f", "out", "-o", "inv.json"], cwd=tmp_path, capture_output=True,
                           text=True, timeout=300)
    assert infer.returncode == 0, infer.stderr[-2000:]
    contains = [json.loads(line) for line in (tmp_path / "inv.json").read_text().splitlines()
                if line.strip() and json.loads(line)["relation"] == "APIContainRelation"]
    contains = [i for i in contains if i["params"][0].get("api_full_name") == STEP]
    assert contains, "the eager steps teach what Adam.step calls"
    check = subprocess.run(["traincheck-check", "-f", "out", "-i", "inv.json", "-o", "checked"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=300)
    assert check.returncode == 0, check.stderr[-2000:]
    summaries = list((tmp_path / "checked").rglob("violations_summary.json"))
    assert summaries
    violated = [v["display_name"] for v in json.loads(summaries[0].read_text())["violations"]
                if v["relation_type"] == "APIContainRelation" and v["display_name"].startswith("Adam.step()")]
    assert not violated, violated
