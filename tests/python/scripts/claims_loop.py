"""A small fine-tuning loop with the bugs the claims at optimizer steps tell (docs/relations.md
§GradientResetRelation, §TrainingModeRelation, §OptimizerHasGradientsRelation, §GradientResetOnceRelation,
§GradientClippedRelation): `--bug` picks one from step 4 on; `none` is the correct program (two micro-batches
per optimizer step, gradients clipped before the step)."""
import argparse

import torch
import torch.nn as nn

BUGS = ["none", "no_zero_grad", "eval_mode", "optimizer_over_frozen", "zero_grad_per_micro_batch", "clip_after_step"]
parser = argparse.ArgumentParser()
parser.add_argument("--bug", choices=BUGS, default="none")
args = parser.parse_args()

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.Dropout(0.1), nn.ReLU(), nn.Linear(16, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
x, y = torch.randn(32, 8), torch.randint(0, 2, (32,))
for step in range(8):
    bug = args.bug if step >= 4 else "none"
    if step == 4:  # fine-tuning: the body frozen, a new optimizer
        for p in model[0].parameters():
            p.requires_grad_(False)
        trained = model[0] if bug == "optimizer_over_frozen" else model[3]
        optimizer = torch.optim.SGD(trained.parameters(), lr=0.05)
        if bug == "eval_mode":
            model.eval()  # a check of the frozen body, and model.train() forgotten
    if bug not in ("no_zero_grad", "zero_grad_per_micro_batch"):
        optimizer.zero_grad()
    for micro in range(2):
        if bug == "zero_grad_per_micro_batch":
            optimizer.zero_grad()  # meant for the whole step: each micro-batch's gradient is thrown away
        loss = nn.functional.cross_entropy(model(x[micro::2]), y[micro::2]) / 2
        loss.backward()
    if bug != "clip_after_step":
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    if bug == "clip_after_step":
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # clips gradients the step already applied
    print(f"loss {loss.item():.6f}")
