"""Sequence classifier: a GRU encoder and a head with an in-place ReLU, trained with the for-loop Adam
(`foreach=False`), a validation pass per epoch in eval mode, and gradient-norm clipping."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


class GRUClassifier(nn.Module):
    def __init__(self, features=5, hidden=32, classes=3):
        super().__init__()
        self.gru = nn.GRU(features, hidden, batch_first=True)
        self.head = nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(inplace=True), nn.Dropout(0.1),
                                  nn.Linear(hidden, classes))

    def forward(self, x):
        _, h = self.gru(x)
        return self.head(h[-1])


def make_data(n, length=16):
    x = torch.randn(n, length, 5)
    y = (x[:, :, 0].cumsum(dim=1)[:, -1] > 0).long() + (x[:, -4:, 1].mean(dim=1) > 0.3).long()
    return x, y


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    x_train, y_train = make_data(256)
    x_val, y_val = make_data(64)
    model = GRUClassifier()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3, foreach=False)
    for epoch in range(args.epochs):
        model.train()
        order = torch.randperm(len(x_train))
        for start in range(0, len(order), args.batch_size):
            idx = order[start:start + args.batch_size]
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x_train[idx]), y_train[idx])
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
        model.eval()
        with torch.no_grad():
            val_acc = (model(x_val).argmax(dim=1) == y_val).float().mean().item()
        print(f"epoch {epoch}: loss {loss.item():.4f} val_acc {val_acc:.3f}")
    print(f"FINAL loss={loss.item():.6f} val_acc={val_acc:.4f}")


if __name__ == "__main__":
    main()
