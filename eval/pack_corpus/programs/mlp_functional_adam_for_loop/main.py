"""Classifier written in the functional style (F.relu, F.dropout, F.cross_entropy in forward, no
activation modules), Adam in its for-loop implementation (foreach=False), an ExponentialLR schedule."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(10, 48)
        self.fc2 = nn.Linear(48, 48)
        self.out = nn.Linear(48, 3)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = F.dropout(x, p=0.1, training=self.training)
        x = F.relu(self.fc2(x))
        return self.out(x)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=4)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    x = torch.randn(240, 10)
    y = torch.bucketize(x[:, 0] + 0.5 * x[:, 1], torch.tensor([-0.5, 0.5]))
    model = Classifier()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3, foreach=False)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.9)
    for epoch in range(args.epochs):
        model.train()
        for i in range(0, len(x), 40):
            logits = model(x[i:i + 40])
            loss = F.cross_entropy(logits, y[i:i + 40])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        scheduler.step()
        model.eval()
        with torch.no_grad():
            acc = (model(x).argmax(1) == y).float().mean().item()
        print(f"epoch {epoch}: loss {loss.item():.4f} acc {acc:.3f}")
    print(f"FINAL loss={loss.item():.6f} acc={acc:.4f}")


if __name__ == "__main__":
    main()
