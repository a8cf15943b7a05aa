"""MLP regressor trained with gradient accumulation (micro-batches of 8, 4 micro-batches per optimizer
step), as one does when the wanted batch does not fit in memory.

--bug: optimizer.zero_grad() runs on every micro-batch instead of once per accumulation cycle, so each
optimizer step only sees the gradient of the last micro-batch (divided by the accumulation factor):
accumulation silently does nothing.
"""
import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bug", action="store_true")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--micro-batch", type=int, default=8)
    parser.add_argument("--accum-steps", type=int, default=4)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    x = torch.randn(96, 10)
    w = torch.randn(10, 1) / 10 ** 0.5
    y = x @ w + 0.3 * torch.cos(x[:, :1] * 3) + 0.05 * torch.randn(96, 1)
    train_loader = DataLoader(TensorDataset(x, y), batch_size=args.micro_batch, shuffle=True,
                              generator=torch.Generator().manual_seed(args.seed))

    model = nn.Sequential(nn.Linear(10, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    criterion = nn.MSELoss()
    n_updates = args.epochs * len(train_loader) // args.accum_steps

    with torch.no_grad():
        print(f"initial full-data loss {criterion(model(x), y).item():.4f}")
    updates = 0
    grad_err = None
    for epoch in range(args.epochs):
        model.train()
        cycle = []
        for i, (xb, yb) in enumerate(train_loader):
            if args.bug:
                optimizer.zero_grad()
            elif i % args.accum_steps == 0:
                optimizer.zero_grad()
            loss = criterion(model(xb), yb) / args.accum_steps
            loss.backward()
            cycle.append((xb, yb))
            if (i + 1) % args.accum_steps == 0:
                if updates == n_updates - 1:
                    # sanity check on the last update: accumulated grad == grad of the whole effective batch
                    full = criterion(model(torch.cat([c[0] for c in cycle])), torch.cat([c[1] for c in cycle]))
                    ref = torch.autograd.grad(full, list(model.parameters()))
                    grad_err = max((p.grad - r).abs().max().item() for p, r in zip(model.parameters(), ref))
                optimizer.step()
                updates += 1
                cycle = []
        with torch.no_grad():
            print(f"epoch {epoch}: full-data loss {criterion(model(x), y).item():.4f}")

    print(f"SYMPTOM accumulated_grad_max_err={grad_err:.6f}")


if __name__ == "__main__":
    main()
