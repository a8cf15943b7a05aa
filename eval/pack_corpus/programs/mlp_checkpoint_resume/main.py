"""Training interrupted and resumed: SGD with momentum and a MultiStepLR schedule; after the first epochs
the model, optimizer and scheduler state dicts are saved with torch.save, a fresh model/optimizer/scheduler
is built, loaded from the checkpoint (torch.load) and training continues to the end."""
import argparse
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


def build():
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[2, 3], gamma=0.3)
    return model, optimizer, scheduler


def train_epoch(model, optimizer, x, y):
    model.train()
    for xb, yb in zip(x.split(32), y.split(32)):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        optimizer.step()
    return loss.item()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--resume-after", type=int, default=2)
    parser.add_argument("--ckpt", default="checkpoints/last.pt")
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    x = torch.randn(192, 10)
    y = (x.norm(dim=1) > 3.1).long()
    model, optimizer, scheduler = build()

    for epoch in range(args.resume_after):
        loss = train_epoch(model, optimizer, x, y)
        scheduler.step()
        print(f"epoch {epoch}: loss {loss:.4f}")
    os.makedirs(os.path.dirname(args.ckpt) or ".", exist_ok=True)
    torch.save({"epoch": args.resume_after, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(), "rng": torch.get_rng_state()}, args.ckpt)

    # Resume as a new process would: everything rebuilt from the checkpoint.
    model, optimizer, scheduler = build()
    state = torch.load(args.ckpt)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    torch.set_rng_state(state["rng"])
    for epoch in range(state["epoch"], args.epochs):
        loss = train_epoch(model, optimizer, x, y)
        scheduler.step()
        print(f"epoch {epoch}: loss {loss:.4f} lr {scheduler.get_last_lr()[0]:.4g}")
    print(f"FINAL loss={loss:.6f}")


if __name__ == "__main__":
    main()
