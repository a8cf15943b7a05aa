"""Small CNN with BatchNorm trained from scratch on synthetic 12x12 images (which quadrant holds a
bright blob), Adam, a few epochs.

--bug: the epoch loop calls a freeze_bn() helper (copied from a fine-tuning script) right after
model.train(), so every BatchNorm layer runs in eval mode during training: it normalises with its initial
running statistics (mean 0, var 1) and never updates them.
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class SmallCNN(nn.Module):
    def __init__(self, n_classes=4):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(16)
        self.fc = nn.Linear(16, n_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.relu(self.bn2(self.conv2(x)))
        return self.fc(x.mean(dim=(2, 3)))


def freeze_bn(model):
    """Keep BatchNorm layers in eval mode (running statistics frozen)."""
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.eval()


def make_images(n, gen):
    labels = torch.randint(0, 4, (n,), generator=gen)
    imgs = 0.5 * torch.randn(n, 1, 12, 12, generator=gen) + 3.0  # bright, offset background
    for i, c in enumerate(labels.tolist()):
        r, col = (c // 2) * 6, (c % 2) * 6
        imgs[i, 0, r + 1:r + 5, col + 1:col + 5] += 2.0
    return imgs, labels


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bug", action="store_true")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    x, y = make_images(192, gen)
    train_loader = DataLoader(TensorDataset(x, y), batch_size=args.batch_size, shuffle=True, generator=gen)

    model = SmallCNN()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)

    for epoch in range(args.epochs):
        model.train()
        if args.bug:
            freeze_bn(model)
        total = 0.0
        for xb, yb in train_loader:
            loss = F.cross_entropy(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item() * len(xb)
        print(f"epoch {epoch}: loss {total / len(x):.4f}")

    model.eval()
    with torch.no_grad():
        acc = (model(x).argmax(dim=1) == y).float().mean().item()
    print(f"eval accuracy {acc:.3f}")
    print(f"SYMPTOM bn1_running_mean_abs={model.bn1.running_mean.abs().mean().item():.4f} "
          f"bn1_batches_tracked={model.bn1.num_batches_tracked.item()}")


if __name__ == "__main__":
    main()
