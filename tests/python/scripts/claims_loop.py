"""A small fine-tuning loop with the bugs the claims at optimizer steps tell (docs/relations.md
§GradientResetRelation, §TrainingModeRelation, §OptimizerHasGradientsRelation): `--bug` picks one from
step 4 on; `none` is the correct program."""
import argparse

import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--bug", choices=["none", "no_zero_grad", "eval_mode", "optimizer_over_frozen"], default="none")
args = parser.parse_args()

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.Dropout(0.1), nn.ReLU(), nn.Linear(16, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
x, y = torch.randn(32, 8), torch.randint(0, 2, (32,))
for step in range(8):
    if step == 4:  # fine-tuning: the body frozen, a new optimizer
        for p in model[0].parameters():
            p.requires_grad_(False)
        trained = model[0] if args.bug == "optimizer_over_frozen" else model[3]
        optimizer = torch.optim.SGD(trained.parameters(), lr=0.05)
        if args.bug == "eval_mode":
            model.eval()  # a check of the frozen body, and model.train() forgotten
    if args.bug != "no_zero_grad" or step < 4:
        optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    print(f"loss {loss.item():.6f}")
