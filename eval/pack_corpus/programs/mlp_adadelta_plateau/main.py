"""Adadelta on a small tabular classifier with ReduceLROnPlateau driven by the validation loss; the
validation split is evaluated each epoch with the model in eval mode."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


class TabularNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(12, 40), nn.ReLU(), nn.Dropout(0.1), nn.Linear(40, 40), nn.ReLU())
        self.head = nn.Linear(40, 3)

    def forward(self, x):
        return self.head(self.body(x))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=4)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    centers = torch.randn(3, 12) * 2
    labels = torch.randint(0, 3, (400,))
    feats = centers[labels] + torch.randn(400, 12)
    tr_x, va_x, tr_y, va_y = feats[:320], feats[320:], labels[:320], labels[320:]

    model = TabularNet()
    optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0, rho=0.9)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode="min", factor=0.5, patience=0)

    for epoch in range(args.epochs):
        model.train()
        for i in range(0, 320, 40):
            logits = model(tr_x[i:i + 40])
            loss = F.cross_entropy(logits, tr_y[i:i + 40])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            val_loss = F.cross_entropy(model(va_x), va_y).item()
        scheduler.step(val_loss)
        print(f"epoch {epoch}: val loss {val_loss:.4f} lr {optimizer.param_groups[0]['lr']:.3g}")
    print(f"FINAL val_loss={val_loss:.6f}")


if __name__ == "__main__":
    main()
