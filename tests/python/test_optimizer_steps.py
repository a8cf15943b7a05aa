"""OptimizerStepsRelation as a user runs it (no model named): a loop that computes gradients and never
steps its optimizer is told at the end of the run; a loop that steps, and a script that builds an optimizer
only to evaluate, are not."""
import json

import pytest

from conftest import collect, in_process_summaries, violated_relations, write_script

INVARIANT = {
    "text_description": "torch.nn.Parameter that an optimizer was built to train is stepped by it once it has gradients",
    "relation": "OptimizerStepsRelation",
    "params": [{"param_type": "VarTypeParam", "var_type": "torch.nn.Parameter", "attr_name": "_TRAINCHECK_optimizer_stepped"}],
    "precondition": {"var": {"inverted": False, "preconditions": [{"clauses": "Unconditional"}]}},
}

PROGRAM = """
import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(32, 8), torch.randint(0, 2, (32,))
for step in range(5):
    {body}
print("done")
"""

BODIES = {
    "steps": "optimizer.zero_grad(); nn.functional.cross_entropy(model(x), y).backward(); optimizer.step()",
    "never_steps": "optimizer.zero_grad(); nn.functional.cross_entropy(model(x), y).backward()",
    "only_evaluates": "model.eval(); torch.no_grad().__enter__(); model(x)",
}


def _in_a_function(program: str) -> str:
    """The program as a training function's body: its optimizer is gone when the run ends."""
    return "def train():\n" + "".join(f"    {line}\n" for line in program.strip().splitlines()) + "train()\n"


@pytest.mark.parametrize("where", ["top_level", "in_a_function"])
@pytest.mark.parametrize("body", list(BODIES))
def test_gradients_never_applied_are_told_at_the_end_of_the_run(tmp_path, body, where):
    (tmp_path / "inv.json").write_text(json.dumps(INVARIANT) + "\n")
    program = PROGRAM.format(body=BODIES[body])
    write_script(tmp_path, "train.py", program if where == "top_level" else _in_a_function(program))
    proc = collect(tmp_path, "-p", "train.py", "-i", "inv.json", "--output-dir", "out")
    assert proc.returncode == 0, proc.stderr
    summaries = in_process_summaries(tmp_path / "out")
    assert violated_relations(summaries) == ({"OptimizerStepsRelation"} if body == "never_steps" else set())
    triggered = sum(s.get("triggered", 0) for s in summaries)
    assert triggered == (0 if body == "only_evaluates" else 1)
