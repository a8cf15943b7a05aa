"""Regression MLP on synthetic data, trained with SGD + momentum.

--bug: optimizer.zero_grad() ended up indented inside the logging block, so it only runs on logging
steps; on every other step the new gradients are added to the old ones.
"""
import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def build_model(d_in=16, hidden=64):
    return nn.Sequential(
        nn.Linear(d_in, hidden), nn.Tanh(),
        nn.Linear(hidden, hidden), nn.Tanh(),
        nn.Linear(hidden, 1),
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bug", action="store_true")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.02)
    parser.add_argument("--log-every", type=int, default=8)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    x = torch.randn(256, 16)
    true_w = torch.randn(16, 1)
    y = torch.tanh(x @ true_w / 4) + 0.05 * torch.randn(256, 1)
    train_loader = DataLoader(TensorDataset(x, y), batch_size=args.batch_size, shuffle=True,
                              generator=torch.Generator().manual_seed(args.seed))

    model = build_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    criterion = nn.MSELoss()

    step = 0
    losses = []
    grad_norms = []
    for epoch in range(args.epochs):
        model.train()
        for xb, yb in train_loader:
            loss = criterion(model(xb), yb)
            loss.backward()
            grad_norms.append(model[0].weight.grad.norm().item())
            optimizer.step()
            losses.append(loss.item())
            if step % args.log_every == 0:
                print(f"epoch {epoch} step {step}: loss {loss.item():.4f}")
                if args.bug:
                    optimizer.zero_grad()
            if not args.bug:
                optimizer.zero_grad()
            step += 1

    print(f"first loss {losses[0]:.4f}, last loss {sum(losses[-4:]) / 4:.4f}")
    print(f"SYMPTOM max_first_layer_grad_norm={max(grad_norms):.4f}")


if __name__ == "__main__":
    main()
