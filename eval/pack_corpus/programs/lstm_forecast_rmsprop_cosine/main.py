"""Multivariate forecasting with a stacked LSTM: three correlated synthetic sensor series, standardised
with training-split statistics, sequence-to-one regression of the next step; RMSprop with momentum and a
CosineAnnealingLR per epoch, gradient clipping; the model with the best validation loss is saved with
torch.save and reloaded for the final evaluation."""
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Forecaster(nn.Module):
    def __init__(self, features=3, hidden=32):
        super().__init__()
        self.lstm = nn.LSTM(features, hidden, num_layers=2, batch_first=True, dropout=0.1)
        self.fc = nn.Linear(hidden, features)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.fc(out[:, -1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--window", type=int, default=20)
    parser.add_argument("--best", default="best_forecaster.pt")
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    t = torch.arange(500.0)
    base = torch.sin(2 * math.pi * t / 50)
    data = torch.stack([base, 0.8 * base.roll(5) + 0.2, base.cumsum(0) / 50], 1) + 0.05 * torch.randn(500, 3)
    split = 400
    mean, std = data[:split].mean(0), data[:split].std(0)
    data = (data - mean) / std

    def make(seq):
        x = torch.stack([seq[i:i + args.window] for i in range(len(seq) - args.window)])
        return x, seq[args.window:]

    train_x, train_y = make(data[:split])
    val_x, val_y = make(data[split - args.window:])

    model = Forecaster()
    optimizer = torch.optim.RMSprop(model.parameters(), lr=2e-3, momentum=0.5)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    best = float("inf")
    for epoch in range(args.epochs):
        model.train()
        perm = torch.randperm(len(train_x))
        for idx in perm.split(32):
            optimizer.zero_grad()
            loss = F.mse_loss(model(train_x[idx]), train_y[idx])
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
        scheduler.step()
        model.eval()
        with torch.no_grad():
            val_loss = F.mse_loss(model(val_x), val_y).item()
        if val_loss < best:
            best = val_loss
            torch.save(model.state_dict(), args.best)
        print(f"epoch {epoch}: train {loss.item():.4f} val {val_loss:.4f}")

    model.load_state_dict(torch.load(args.best))
    model.eval()
    with torch.no_grad():
        final = F.mse_loss(model(val_x), val_y).item()
    print(f"FINAL loss={loss.item():.6f} best_val={final:.6f}")


if __name__ == "__main__":
    main()
