"""Encoder + MLP head classifier that keeps a running mean of its encoder features for monitoring.

--bug: forward() detaches the encoder output itself (feat = feat.detach()) before updating the running
statistics, instead of detaching only the copy used for the statistics; the head still trains, but no
gradient reaches the encoder, which stays at its random initialisation.
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Classifier(nn.Module):
    def __init__(self, d_in=20, hidden=64, n_classes=3, detach_features=False):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.head = nn.Sequential(nn.Linear(hidden, 32), nn.ReLU(), nn.Linear(32, n_classes))
        self.register_buffer("feat_mean", torch.zeros(hidden))
        self.detach_features = detach_features

    def forward(self, x):
        feat = self.encoder(x)
        if self.training:
            # running mean of the features, for monitoring dead units
            if self.detach_features:
                feat = feat.detach()
                self.feat_mean.mul_(0.9).add_(0.1 * feat.mean(dim=0))
            else:
                self.feat_mean.mul_(0.9).add_(0.1 * feat.detach().mean(dim=0))
        return self.head(feat)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bug", action="store_true")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    x = torch.randn(256, 20, generator=gen)
    proj = torch.randn(20, 8, generator=gen)
    mix = torch.randn(8, 3, generator=gen)
    y = (torch.tanh(x @ proj) @ mix).argmax(dim=1)
    train_loader = DataLoader(TensorDataset(x, y), batch_size=args.batch_size, shuffle=True, generator=gen)

    model = Classifier(detach_features=args.bug)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)

    step = 0
    for epoch in range(args.epochs):
        model.train()
        for xb, yb in train_loader:
            loss = F.cross_entropy(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            if step == 1:
                first_loss = loss.item()
            last_loss = loss.item()
            if step % 8 == 0:
                print(f"epoch {epoch} step {step}: loss {loss.item():.4f} dead units {(model.feat_mean == 0).sum().item()}")

    grad = model.encoder[0].weight.grad
    grad_norm = 0.0 if grad is None else grad.norm().item()
    print(f"first loss {first_loss:.4f}, last loss {last_loss:.4f}")
    print(f"SYMPTOM encoder_first_layer_grad_norm={grad_norm:.6f}")


if __name__ == "__main__":
    main()
