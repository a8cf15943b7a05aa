"""A small CNN with batch norm and dropout trained on synthetic 16x16 images, with a validation pass over a
held-out set after every epoch (under torch.no_grad()), keeping the best validation accuracy.

--bug: the validation pass forgets `model.eval()`. It runs with dropout active and, worse, every batch-norm
layer updates its running statistics with the validation images: the accuracy reported is that of a
randomly thinned network, and the statistics the model normalises with afterwards were not those of its
training batches. Nothing fails; the validation accuracy is just lower and noisier.
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class SmallCNN(nn.Module):
    def __init__(self, classes=3):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        )
        self.drop = nn.Dropout(0.3)
        self.classifier = nn.Linear(16, classes)

    def forward(self, x):
        return self.classifier(self.drop(self.features(x).flatten(1)))


def make_images(gen, n):
    labels = torch.randint(0, 3, (n,), generator=gen)
    images = torch.randn(n, 1, 16, 16, generator=gen) * 0.5
    for c in range(3):  # each class lights up its own band of rows
        images[labels == c, :, 5 * c:5 * c + 4, :] += 1.0
    return TensorDataset(images, labels)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bug", action="store_true")
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    train_loader = DataLoader(make_images(gen, 192), batch_size=32, shuffle=True)
    val_loader = DataLoader(make_images(gen, 96), batch_size=32)

    model = SmallCNN()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    best = 0.0
    for epoch in range(args.epochs):
        model.train()
        for images, labels in train_loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(images), labels)
            loss.backward()
            optimizer.step()

        if not args.bug:
            model.eval()
        correct = 0
        with torch.no_grad():
            for images, labels in val_loader:
                logits = model(images)
                predictions = logits.argmax(dim=1)
                correct += (predictions == labels).sum().item()
        accuracy = correct / len(val_loader.dataset)
        best = max(best, accuracy)
        print(f"epoch {epoch}: loss {loss.item():.4f} val_acc {accuracy:.3f}")

    updates = int(model.features[1].num_batches_tracked)  # batches batch norm took its statistics from
    print(f"SYMPTOM bn_statistics_batches={updates} best_val_acc={best:.3f}")


if __name__ == "__main__":
    main()
