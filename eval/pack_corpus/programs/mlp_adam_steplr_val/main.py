"""Multi-class MLP with dropout and batch norm: Adam, StepLR stepped per epoch, a validation pass after
each epoch (model.eval() under torch.no_grad(), then model.train() again), DataLoader over a TensorDataset."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset, random_split


class Net(nn.Module):
    def __init__(self, d_in=16, hidden=64, classes=5):
        super().__init__()
        self.fc1 = nn.Linear(d_in, hidden)
        self.bn1 = nn.BatchNorm1d(hidden)
        self.drop = nn.Dropout(0.2)
        self.fc2 = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.fc2(self.drop(F.relu(self.bn1(self.fc1(x)))))


def evaluate(model, loader):
    model.eval()
    correct = total = 0
    loss_sum = 0.0
    with torch.no_grad():
        for xb, yb in loader:
            out = model(xb)
            loss_sum += F.cross_entropy(out, yb, reduction="sum").item()
            correct += (out.argmax(1) == yb).sum().item()
            total += len(yb)
    model.train()
    return loss_sum / total, correct / total


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    x = torch.randn(480, 16)
    y = (x @ torch.randn(16, 5)).argmax(1)
    train_set, val_set = random_split(TensorDataset(x, y), [384, 96], generator=torch.Generator().manual_seed(args.seed))
    train_loader = DataLoader(train_set, batch_size=32, shuffle=True, generator=torch.Generator().manual_seed(args.seed))
    val_loader = DataLoader(val_set, batch_size=48)

    model = Net()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)

    model.train()
    for epoch in range(args.epochs):
        for xb, yb in train_loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            optimizer.step()
        scheduler.step()
        val_loss, val_acc = evaluate(model, val_loader)
        print(f"epoch {epoch}: train loss {loss.item():.4f} val loss {val_loss:.4f} acc {val_acc:.3f} lr {scheduler.get_last_lr()[0]:.4g}")
    print(f"FINAL val_loss={val_loss:.6f} val_acc={val_acc:.4f}")


if __name__ == "__main__":
    main()
