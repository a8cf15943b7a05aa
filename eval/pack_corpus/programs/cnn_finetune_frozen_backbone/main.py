"""Transfer learning: a CNN is pre-trained on one synthetic task, its weights saved and loaded into a new
model whose classifier head is replaced for a second task. Phase 1 freezes the backbone
(requires_grad_(False), backbone in eval mode, optimizer over the head only); phase 2 unfreezes the last
conv block and adds it to the optimizer as a parameter group with a smaller learning rate."""
import argparse
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


class SmallCNN(nn.Module):
    def __init__(self, classes):
        super().__init__()
        self.block1 = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2))
        self.block2 = nn.Sequential(nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                                    nn.AdaptiveAvgPool2d(1))
        self.head = nn.Linear(16, classes)

    def forward(self, x):
        return self.head(self.block2(self.block1(x)).flatten(1))


def blobs(n, classes, gen):
    y = torch.randint(0, classes, (n,), generator=gen)
    x = torch.randn(n, 1, 12, 12, generator=gen) * 0.4
    for c in range(classes):
        r, col = divmod(c, 2)
        x[y == c, 0, r * 6:(r + 1) * 6, col * 6:(col + 1) * 6] += 1.0
    return x, y


def run_epoch(model, optimizer, x, y):
    for xb, yb in zip(x.split(16), y.split(16)):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        optimizer.step()
    return loss.item()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--weights", default="pretrained_cnn.pt")
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)

    # Pre-training on the 4-class task.
    pretrained = SmallCNN(classes=4)
    opt = torch.optim.Adam(pretrained.parameters(), lr=3e-3)
    px, py = blobs(128, 4, gen)
    pretrained.train()
    print(f"pretrain loss {run_epoch(pretrained, opt, px, py):.4f}")
    torch.save(pretrained.state_dict(), args.weights)

    # Fine-tuning on the 2-class task.
    model = SmallCNN(classes=4)
    model.load_state_dict(torch.load(args.weights))
    model.head = nn.Linear(16, 2)
    fx, fy = blobs(96, 2, gen)

    for p in list(model.block1.parameters()) + list(model.block2.parameters()):
        p.requires_grad_(False)
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    model.train()
    model.block1.eval()
    model.block2.eval()  # frozen batch norm statistics
    print(f"head only: loss {run_epoch(model, optimizer, fx, fy):.4f}")

    for p in model.block2.parameters():
        p.requires_grad_(True)
    model.block2.train()
    optimizer.add_param_group({"params": list(model.block2.parameters()), "lr": 1e-3})
    loss = run_epoch(model, optimizer, fx, fy)
    print(f"block2 unfrozen: loss {loss:.4f}")
    if os.path.exists(args.weights):
        os.remove(args.weights)
    print(f"FINAL loss={loss:.6f}")


if __name__ == "__main__":
    main()
