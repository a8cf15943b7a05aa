"""CNN trained by a Trainer class of the script's own (the loop in its methods, as in many repositories:
fit -> _run_epoch -> _run_batch), LeakyReLU(inplace=True), Adam, a validation pass per epoch."""
import argparse

import torch
import torch.nn as nn


class Trainer:
    def __init__(self, model, train_data, val_data, optimizer):
        self.model = model
        self.train_data = train_data
        self.val_data = val_data
        self.optimizer = optimizer
        self.criterion = nn.CrossEntropyLoss()

    def _run_batch(self, x, y):
        self.optimizer.zero_grad()
        loss = self.criterion(self.model(x), y)
        loss.backward()
        self.optimizer.step()
        return loss.item()

    def _run_epoch(self):
        self.model.train()
        losses = [self._run_batch(x, y) for x, y in self.train_data]
        return sum(losses) / len(losses)

    def _validate(self):
        self.model.eval()
        correct = total = 0
        with torch.no_grad():
            for x, y in self.val_data:
                correct += (self.model(x).argmax(1) == y).sum().item()
                total += len(y)
        return correct / total

    def fit(self, epochs):
        for epoch in range(epochs):
            loss = self._run_epoch()
            acc = self._validate()
            print(f"epoch {epoch}: loss {loss:.4f} val_acc {acc:.3f}")
        return loss, acc


def batches(images, labels, size):
    return [(images[i:i + size], labels[i:i + size]) for i in range(0, len(images), size)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    images = torch.randn(160, 3, 8, 8)
    labels = (images[:, 0].mean(dim=(1, 2)) > 0).long()
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.LeakyReLU(0.1, inplace=True),
        nn.Conv2d(8, 8, 3, padding=1, stride=2), nn.LeakyReLU(0.1, inplace=True),
        nn.Flatten(), nn.Linear(8 * 4 * 4, 2),
    )
    trainer = Trainer(model, batches(images[:128], labels[:128], 16), batches(images[128:], labels[128:], 16),
                      torch.optim.Adam(model.parameters(), lr=1e-3))
    loss, acc = trainer.fit(args.epochs)
    print(f"FINAL loss={loss:.6f} val_acc={acc:.4f}")


if __name__ == "__main__":
    main()
