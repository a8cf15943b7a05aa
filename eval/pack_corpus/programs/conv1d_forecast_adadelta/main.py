"""Time-series forecasting with a 1-D CNN (dilated causal convolutions by left padding): windows of a
synthetic multi-seasonal signal predict the next 4 values; Adadelta with its default settings and no
scheduler (as the classic examples use it); validation MAE on the last part of the series each epoch."""
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class CausalConvForecaster(nn.Module):
    def __init__(self, channels=16, horizon=4):
        super().__init__()
        self.convs = nn.ModuleList([nn.Conv1d(1 if i == 0 else channels, channels, 3, dilation=2 ** i)
                                    for i in range(3)])
        self.head = nn.Linear(channels, horizon)

    def forward(self, x):                     # x: (batch, window)
        h = x.unsqueeze(1)
        for conv in self.convs:
            h = F.relu(conv(F.pad(h, (2 * conv.dilation[0], 0))))
        return self.head(h[:, :, -1])


def windows(series, window, horizon):
    xs = torch.stack([series[i:i + window] for i in range(len(series) - window - horizon)])
    ys = torch.stack([series[i + window:i + window + horizon] for i in range(len(series) - window - horizon)])
    return xs, ys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    t = torch.arange(600.0)
    series = torch.sin(2 * math.pi * t / 24) + 0.5 * torch.sin(2 * math.pi * t / 7) + 0.1 * torch.randn(600)
    train_x, train_y = windows(series[:480], 32, 4)
    val_x, val_y = windows(series[480:], 32, 4)
    loader = DataLoader(TensorDataset(train_x, train_y), batch_size=32, shuffle=True)

    model = CausalConvForecaster()
    optimizer = torch.optim.Adadelta(model.parameters())
    for epoch in range(args.epochs):
        model.train()
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = F.mse_loss(model(xb), yb)
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            mae = (model(val_x) - val_y).abs().mean().item()
        print(f"epoch {epoch}: loss {loss.item():.4f} val MAE {mae:.4f}")
    print(f"FINAL loss={loss.item():.6f} val_mae={mae:.4f}")


if __name__ == "__main__":
    main()
