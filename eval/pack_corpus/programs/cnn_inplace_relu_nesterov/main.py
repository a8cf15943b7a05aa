"""Small CNN classifier whose activations are in-place ReLUs (nn.ReLU(inplace=True), as the common
vision models write them), SGD with Nesterov momentum and weight decay, a StepLR schedule, a DataLoader."""
import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self, classes=4):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d(1),
        )
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(16, 32), nn.ReLU(inplace=True), nn.Linear(32, classes))

    def forward(self, x):
        return self.classifier(self.features(x))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    images = torch.randn(192, 1, 12, 12)
    labels = (images.mean(dim=(1, 2, 3)) * 8).long().clamp(-2, 1) + 2
    loader = DataLoader(TensorDataset(images, labels), batch_size=32, shuffle=True)

    model = Net()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)

    for epoch in range(args.epochs):
        model.train()
        running = 0.0
        for x, y in loader:
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            running += loss.item()
        scheduler.step()
        print(f"epoch {epoch}: loss {running / len(loader):.4f}")

    model.eval()
    with torch.no_grad():
        acc = (model(images).argmax(1) == labels).float().mean().item()
    print(f"FINAL loss={running / len(loader):.6f} acc={acc:.4f}")


if __name__ == "__main__":
    main()
