"""Regression MLP trained with no optimizer object: plain gradient descent written by hand, as in
tutorials that teach autograd (parameters updated in place under no_grad, gradients zeroed by hand)."""
import argparse

import torch
import torch.nn as nn


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--lr", type=float, default=0.05)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    x = torch.randn(128, 6)
    y = (x[:, :3].sum(dim=1, keepdim=True) - x[:, 3:].prod(dim=1, keepdim=True)).tanh()

    model = nn.Sequential(nn.Linear(6, 24), nn.ReLU(), nn.Linear(24, 1))
    loss_fn = nn.MSELoss()
    for step in range(args.steps):
        loss = loss_fn(model(x), y)
        model.zero_grad()
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= args.lr * p.grad
        if step % 10 == 0:
            print(f"step {step}: loss {loss.item():.4f}")
    print(f"FINAL loss={loss.item():.6f}")


if __name__ == "__main__":
    main()
