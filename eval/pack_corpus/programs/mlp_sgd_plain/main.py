"""Binary classifier MLP, plain SGD, a hand loop over shuffled index slices (no DataLoader)."""
import argparse

import torch
import torch.nn as nn


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    x = torch.randn(256, 8)
    y = ((x[:, 0] * x[:, 1] + x[:, 2]) > 0).float().unsqueeze(1)

    model = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1))
    criterion = nn.BCEWithLogitsLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    for epoch in range(args.epochs):
        perm = torch.randperm(x.shape[0])
        total = 0.0
        for i in range(0, x.shape[0], args.batch_size):
            idx = perm[i:i + args.batch_size]
            optimizer.zero_grad()
            loss = criterion(model(x[idx]), y[idx])
            loss.backward()
            optimizer.step()
            total += loss.item() * len(idx)
        print(f"epoch {epoch}: loss {total / x.shape[0]:.4f}")

    with torch.no_grad():
        acc = ((model(x) > 0).float() == y).float().mean().item()
    print(f"FINAL loss={total / x.shape[0]:.6f} acc={acc:.4f}")


if __name__ == "__main__":
    main()
