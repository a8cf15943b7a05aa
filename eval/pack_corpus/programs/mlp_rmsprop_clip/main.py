"""Regression MLP with RMSprop and gradient-norm clipping before each step (clip_grad_norm_ between
backward and step), Huber loss, DataLoader with shuffling."""
import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--max-norm", type=float, default=1.0)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    x = torch.rand(320, 6) * 4 - 2
    y = torch.sin(x[:, :1] * 2) + x[:, 1:2] ** 2 - 0.5 * x[:, 2:3]
    loader = DataLoader(TensorDataset(x, y), batch_size=20, shuffle=True)

    model = nn.Sequential(nn.Linear(6, 48), nn.GELU(), nn.Linear(48, 48), nn.GELU(), nn.Linear(48, 1))
    optimizer = torch.optim.RMSprop(model.parameters(), lr=3e-3, alpha=0.9)
    loss_fn = nn.SmoothL1Loss()

    norms = []
    for epoch in range(args.epochs):
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            norms.append(torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_norm).item())
            optimizer.step()
        print(f"epoch {epoch}: loss {loss.item():.4f} max grad norm {max(norms):.3f}")
    print(f"FINAL loss={loss.item():.6f} clipped={sum(n > args.max_norm for n in norms)}")


if __name__ == "__main__":
    main()
