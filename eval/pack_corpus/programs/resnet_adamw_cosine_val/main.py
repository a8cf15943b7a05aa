"""A small ResNet (BasicBlocks with identity and 1x1-projection shortcuts) on synthetic 3x16x16 images;
AdamW, CosineAnnealingLR per epoch, label smoothing, a validation loop with accuracy after each epoch,
and the best model's state kept in memory (copy.deepcopy of the state dict)."""
import argparse
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNet(nn.Module):
    def __init__(self, classes=3):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
        self.layer1 = BasicBlock(16, 16)
        self.layer2 = BasicBlock(16, 32, stride=2)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(32, classes)

    def forward(self, x):
        x = self.layer2(self.layer1(self.stem(x)))
        return self.fc(torch.flatten(self.pool(x), 1))


def make_images(n, gen):
    labels = torch.randint(0, 3, (n,), generator=gen)
    imgs = torch.randn(n, 3, 16, 16, generator=gen) * 0.5
    imgs[torch.arange(n), labels] += 1.0  # the label's colour channel is brighter
    return imgs, labels


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    train_loader = DataLoader(TensorDataset(*make_images(128, gen)), batch_size=16, shuffle=True, generator=gen)
    val_loader = DataLoader(TensorDataset(*make_images(48, gen)), batch_size=16)

    model = ResNet()
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.05)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)

    best_acc, best_state = -1.0, None
    for epoch in range(args.epochs):
        model.train()
        for inputs, targets in train_loader:
            optimizer.zero_grad()
            loss = criterion(model(inputs), targets)
            loss.backward()
            optimizer.step()
        scheduler.step()

        model.eval()
        correct = 0
        with torch.no_grad():
            for inputs, targets in val_loader:
                correct += (model(inputs).argmax(1) == targets).sum().item()
        acc = correct / len(val_loader.dataset)
        if acc > best_acc:
            best_acc, best_state = acc, copy.deepcopy(model.state_dict())
        print(f"epoch {epoch}: loss {loss.item():.4f} val acc {acc:.3f}")
    model.load_state_dict(best_state)
    print(f"FINAL loss={loss.item():.6f} best_acc={best_acc:.4f}")


if __name__ == "__main__":
    main()
