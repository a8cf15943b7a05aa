"""Mixed precision with a GradScaler, run as a user runs it (the shipped pack, no model named): its
unscaling writes the gradients without moving their version counters, so the tracker is told of it
(watch_gradient_unscaling), and clipping the still-scaled gradients is caught by GradientClippedRelation."""
import pytest

from conftest import collect, in_process_summaries, violated_relations, write_script

PROGRAM = """
import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 3))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
scaler = torch.amp.GradScaler("cpu")
x, y = torch.randn(32, 8), torch.randint(0, 3, (32,))
for step in range(6):
    optimizer.zero_grad()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = nn.functional.cross_entropy(model(x), y)
    scaler.scale(loss).backward()
    {clip_and_unscale}
    scaler.step(optimizer)
    scaler.update()
print("loss", round(loss.item(), 4))
"""

ORDERS = {
    "unscale_then_clip": "scaler.unscale_(optimizer); torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)",
    "clip_then_unscale": "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0); scaler.unscale_(optimizer)",
    "clip_then_step_unscales": "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)",
}


@pytest.mark.parametrize("order", list(ORDERS))
def test_clipping_scaled_gradients_is_caught_and_clipping_unscaled_ones_is_not(tmp_path, order):
    write_script(tmp_path, "amp.py", PROGRAM.format(clip_and_unscale=ORDERS[order]))
    proc = collect(tmp_path, "-p", "amp.py", "--output-dir", "out")
    assert proc.returncode == 0, proc.stderr
    violated = violated_relations(in_process_summaries(tmp_path / "out"))
    assert violated == (set() if order == "unscale_then_clip" else {"GradientClippedRelation"})
