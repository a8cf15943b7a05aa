"""LeNet-style CNN (conv, batch norm, max pool) on synthetic 1x16x16 images of oriented stripes; SGD with
Nesterov momentum and OneCycleLR stepped per batch; DataLoader over a TensorDataset."""
import argparse
import math

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def stripes(n, gen):
    angle = torch.randint(0, 4, (n,), generator=gen)
    yy, xx = torch.meshgrid(torch.arange(16.0), torch.arange(16.0), indexing="ij")
    theta = angle.float()[:, None, None] * math.pi / 4
    img = torch.sin((xx * torch.cos(theta) + yy * torch.sin(theta)) * 1.2)
    img = img + 0.3 * torch.randn(n, 16, 16, generator=gen)
    return img.unsqueeze(1), angle


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2))
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(16 * 4 * 4, 32), nn.ReLU(), nn.Linear(32, 4))

    def forward(self, x):
        return self.classifier(self.features(x))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    images, labels = stripes(192, gen)
    loader = DataLoader(TensorDataset(images, labels), batch_size=24, shuffle=True, generator=gen)

    model = LeNet()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=0.1, epochs=args.epochs,
                                                    steps_per_epoch=len(loader))
    for epoch in range(args.epochs):
        model.train()
        correct = 0
        for images_b, labels_b in loader:
            outputs = model(images_b)
            loss = criterion(outputs, labels_b)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
            correct += (outputs.argmax(1) == labels_b).sum().item()
        print(f"epoch {epoch}: loss {loss.item():.4f} train acc {correct / len(images):.3f}")
    print(f"FINAL loss={loss.item():.6f} acc={correct / len(images):.4f}")


if __name__ == "__main__":
    main()
