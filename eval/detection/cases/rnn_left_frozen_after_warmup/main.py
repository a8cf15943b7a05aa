"""An LSTM next-value forecaster on synthetic sine mixtures. The optimizer is built over the whole model; the
LSTM is then frozen for a warm-up epoch so that the freshly initialised output head settles first, and
unfrozen when the warm-up ends.

--bug: the unfreeze at the end of the warm-up names the head (`set_trainable(model.head, True)`, a
copy-paste of the line above it) instead of the LSTM. The LSTM stays frozen for the whole run: only the
linear head trains, the loss plateaus high, and nothing fails.
"""
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Forecaster(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.lstm = nn.LSTM(1, hidden, num_layers=2, batch_first=True)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out[:, -1])


def set_trainable(module, flag):
    for p in module.parameters():
        p.requires_grad = flag


def make_series(gen, n=256, length=20):
    freq = 0.2 + 0.6 * torch.rand(n, 1, generator=gen)
    phase = 2 * math.pi * torch.rand(n, 1, generator=gen)
    t = torch.arange(length + 1).float()
    series = torch.sin(freq * t + phase) + 0.05 * torch.randn(n, length + 1, generator=gen)
    return TensorDataset(series[:, :-1, None], series[:, -1:])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bug", action="store_true")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--warmup-epochs", type=int, default=1)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    loader = DataLoader(make_series(torch.Generator().manual_seed(args.seed)), batch_size=32, shuffle=True)
    model = Forecaster()
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    set_trainable(model.lstm, False)  # warm up the head first

    for epoch in range(args.epochs):
        if epoch == args.warmup_epochs:
            set_trainable(model.head if args.bug else model.lstm, True)
        total = 0.0
        for x, y in loader:
            optimizer.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
            total += loss.item()
        print(f"epoch {epoch}: loss {total / len(loader):.4f}")

    frozen = sum(p.numel() for p in model.lstm.parameters() if not p.requires_grad)
    print(f"SYMPTOM lstm_frozen_params={frozen} final_loss={total / len(loader):.4f}")


if __name__ == "__main__":
    main()
