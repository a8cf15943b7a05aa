"""Gradient descent written by hand, with no optimizer object (parameters updated in place under no_grad), in
the styles tutorials teach: `--style` zeroes the gradients in place after the update (`p.grad.zero_()`),
sets them to None, or calls `model.zero_grad()` before backward; `missing_reset` forgets to reset them, so
each update applies the sum of every gradient so far. `--through-data` updates through `p.data` instead (as
PyTorch's word_language_model example does: its own version counter, so no write the parameter's counts)
after clipping the gradients. `--validation eval` validates after each of two epochs in eval mode (the model
then has dropout); `missing_eval` validates in training mode."""
import argparse

import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--style", choices=["zero_in_place", "set_to_none", "zero_grad_first", "missing_reset"],
                    default="zero_in_place")
parser.add_argument("--through-data", action="store_true")
parser.add_argument("--validation", choices=["eval", "missing_eval"])
args = parser.parse_args()

torch.manual_seed(0)
layers = [nn.Linear(8, 16), nn.Tanh()] + ([nn.Dropout(0.1)] if args.validation else []) + [nn.Linear(16, 1)]
model = nn.Sequential(*layers)
x, y = torch.randn(64, 8), torch.randn(64, 1)


def train(steps=8, lr=0.05):
    for step in range(steps):
        if args.style == "zero_grad_first":
            model.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        if args.through_data:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        with torch.no_grad():
            for p in model.parameters():
                if args.through_data:
                    p.data.add_(p.grad, alpha=-lr)
                else:
                    p -= lr * p.grad
                if args.style == "zero_in_place":
                    p.grad.zero_()
                elif args.style == "set_to_none":
                    p.grad = None
        print(f"step {step} loss {loss.item():.6f}")


def validate():
    if args.validation == "eval":
        model.eval()
    with torch.no_grad():
        for batch in x.split(16):
            model(batch)
    model.train()


for epoch in range(2 if args.validation else 1):
    train()
    if args.validation:
        validate()
