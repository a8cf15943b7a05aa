"""Small VGG-style CNN counting bright blobs in synthetic 1x12x12 images (0-3 blobs, 4 classes). The model
is initialised by the script's own `init_weights`, applied with `model.apply` after construction (He
initialisation for the ReLU layers, zero biases, unit batch-norm scales), as many training scripts do over
torch's defaults; Adam with MultiStepLR stepped per epoch; a validation pass after each epoch."""
import argparse

import torch
import torch.nn as nn


def blobs(n, gen):
    counts = torch.randint(0, 4, (n,), generator=gen)
    images = 0.2 * torch.randn(n, 1, 12, 12, generator=gen)
    for i in range(n):
        for _ in range(int(counts[i])):
            y, x = torch.randint(1, 11, (2,), generator=gen).tolist()
            images[i, 0, y - 1:y + 2, x - 1:x + 2] += 1.0
    return images, counts


def init_weights(m):
    if isinstance(m, (nn.Conv2d, nn.Linear)):
        nn.init.kaiming_uniform_(m.weight, nonlinearity="relu")
        if m.bias is not None:
            nn.init.zeros_(m.bias)
    elif isinstance(m, nn.BatchNorm2d):
        nn.init.ones_(m.weight)
        nn.init.zeros_(m.bias)


class SmallVGG(nn.Module):
    def __init__(self, classes=4):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
            nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2))
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(16 * 3 * 3, 32), nn.ReLU(), nn.Linear(32, classes))

    def forward(self, x):
        return self.head(self.features(x))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    train_x, train_y = blobs(160, gen)
    val_x, val_y = blobs(64, gen)

    model = SmallVGG()
    model.apply(init_weights)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[2], gamma=0.3)
    criterion = nn.CrossEntropyLoss()

    for epoch in range(args.epochs):
        model.train()
        order = torch.randperm(len(train_x), generator=gen)
        for start in range(0, len(order), args.batch_size):
            idx = order[start:start + args.batch_size]
            optimizer.zero_grad()
            loss = criterion(model(train_x[idx]), train_y[idx])
            loss.backward()
            optimizer.step()
        scheduler.step()

        model.eval()
        with torch.no_grad():
            val_logits = model(val_x)
            val_loss = criterion(val_logits, val_y).item()
            val_acc = (val_logits.argmax(1) == val_y).float().mean().item()
        print(f"epoch {epoch}: train loss {loss.item():.4f} val loss {val_loss:.4f} val acc {val_acc:.3f}")
    print(f"FINAL loss={loss.item():.6f} val_loss={val_loss:.6f} val_acc={val_acc:.4f}")


if __name__ == "__main__":
    main()
