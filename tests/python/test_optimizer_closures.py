"""An optimizer stepped with a closure (LBFGS calls it several times per step, each call resetting and
recomputing the gradients) under the shipped pack, as a user runs it: the closure's resets are the step's
own, so no claim of resets between steps is made and a correct program stays silent; a step without a
closure is still judged."""
from conftest import collect, in_process_summaries, violated_relations, write_script

PROGRAM = """
import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
x, y = torch.randn(32, 4), torch.randn(32, 1)
optimizer = torch.optim.{optimizer}
for step in range(4):
    def closure():
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        return loss
    {step}
print("done")
"""


def _violated(tmp_path, name, optimizer, step):
    write_script(tmp_path, f"{name}.py", PROGRAM.format(optimizer=optimizer, step=step))
    proc = collect(tmp_path, "-p", f"{name}.py", "--output-dir", name)
    assert proc.returncode == 0, proc.stderr
    return violated_relations(in_process_summaries(tmp_path / name))


def test_lbfgs_with_its_closure_raises_nothing(tmp_path):
    assert _violated(tmp_path, "lbfgs", "LBFGS(model.parameters(), lr=0.5, max_iter=4)", "optimizer.step(closure)") == set()


def test_a_step_without_a_closure_is_still_judged(tmp_path):
    # The loop forgets zero_grad: each backward accumulates into the gradient the last step used.
    step = "nn.functional.mse_loss(model(x), y).backward(); optimizer.step()"
    assert "GradientResetRelation" in _violated(tmp_path, "sgd", "SGD(model.parameters(), lr=0.01)", step)
