"""Transfer learning on synthetic data: pre-train a small classifier on task A, then freeze the backbone,
put a new head on it and fine-tune on task B.

--bug: the fine-tuning optimizer is created before the new head is attached, so it holds only the
(frozen) backbone and old-head parameters; the new head gets gradients that no optimizer applies.
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self, d_in=24, hidden=64, n_classes=5):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Linear(d_in, hidden), nn.ReLU(),
            nn.Linear(hidden, hidden), nn.ReLU(),
        )
        self.head = nn.Linear(hidden, n_classes)

    def forward(self, x):
        return self.head(self.backbone(x))


def make_task(n, n_classes, proj, gen):
    x = torch.randn(n, 24, generator=gen)
    w = torch.randn(proj.shape[1], n_classes, generator=gen)
    y = (torch.relu(x @ proj) @ w).argmax(dim=1)
    return TensorDataset(x, y)


def accuracy(model, ds):
    with torch.no_grad():
        x, y = ds.tensors
        return (model(x).argmax(dim=1) == y).float().mean().item()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bug", action="store_true")
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    proj = torch.randn(24, 32, generator=gen)  # both tasks share features
    task_a = make_task(256, 5, proj, gen)
    task_b = make_task(512, 3, proj, gen)
    pretrain_loader = DataLoader(task_a, batch_size=args.batch_size, shuffle=True, generator=gen)
    finetune_loader = DataLoader(task_b, batch_size=args.batch_size, shuffle=True, generator=gen)

    model = Net()

    # ---- stage 1: pre-training on task A (8 steps)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    model.train()
    for x, y in pretrain_loader:
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"pre-training done: task A accuracy {accuracy(model, task_a):.3f}")

    # ---- stage 2: fine-tuning on task B with a frozen backbone (16 steps)
    for p in model.parameters():
        p.requires_grad = False
    if args.bug:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        model.head = nn.Linear(64, 3)
    else:
        model.head = nn.Linear(64, 3)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    head_before = model.head.weight.detach().clone()

    losses = []
    for x, y in finetune_loader:
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    print(f"fine-tuning loss {losses[0]:.4f} -> {sum(losses[-4:]) / 4:.4f}, task B accuracy {accuracy(model, task_b):.3f}")
    head_change = (model.head.weight.detach() - head_before).abs().max().item()
    print(f"SYMPTOM head_weight_change={head_change:.6f}")


if __name__ == "__main__":
    main()
