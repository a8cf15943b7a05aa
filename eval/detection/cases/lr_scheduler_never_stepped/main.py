"""Small 1-D CNN classifying noisy synthetic waveforms by frequency, Adam with a per-epoch StepLR
schedule (the learning rate halves after every epoch).

--bug: scheduler.step() is never called (the scheduler is created but the call was left out of the epoch
loop), so the learning rate stays at its initial value for the whole run.
"""
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class WaveCNN(nn.Module):
    def __init__(self, n_classes=4):
        super().__init__()
        self.conv1 = nn.Conv1d(1, 16, kernel_size=7, padding=3)
        self.conv2 = nn.Conv1d(16, 32, kernel_size=5, padding=2)
        self.fc = nn.Linear(32, n_classes)

    def forward(self, x):
        x = F.max_pool1d(F.relu(self.conv1(x)), 2)
        x = F.max_pool1d(F.relu(self.conv2(x)), 2)
        return self.fc(x.mean(dim=2))


def make_waves(n, length, gen):
    labels = torch.randint(0, 4, (n,), generator=gen)
    freqs = (labels.float() + 1) * 2.0
    phase = torch.rand(n, 1, generator=gen) * 2 * math.pi
    t = torch.linspace(0, 1, length)
    x = torch.sin(2 * math.pi * freqs[:, None] * t + phase) + 0.3 * torch.randn(n, length, generator=gen)
    return x.unsqueeze(1), labels


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bug", action="store_true")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.01)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    x, y = make_waves(192, 64, gen)
    train_loader = DataLoader(TensorDataset(x, y), batch_size=args.batch_size, shuffle=True, generator=gen)

    model = WaveCNN()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)

    for epoch in range(args.epochs):
        model.train()
        total = 0.0
        for xb, yb in train_loader:
            loss = F.cross_entropy(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item() * len(xb)
        print(f"epoch {epoch}: lr {optimizer.param_groups[0]['lr']:.4f} loss {total / len(x):.4f}")
        if not args.bug:
            scheduler.step()

    print(f"SYMPTOM final_lr={optimizer.param_groups[0]['lr']:.6f}")


if __name__ == "__main__":
    main()
