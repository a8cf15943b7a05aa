"""A CNN trained with everything at once, as a tuned recipe does: bfloat16 autocast on the CPU, gradient
accumulation over 2 micro-batches, gradient clipping by value before each step, Adam with an
ExponentialLR decay per optimizer step."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--micro-batches", type=int, default=16)
    parser.add_argument("--accum", type=int, default=2)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    model = nn.Sequential(
        nn.Conv2d(3, 12, 3, padding=1), nn.GroupNorm(4, 12), nn.SiLU(),
        nn.Conv2d(12, 12, 3, stride=2, padding=1), nn.SiLU(),
        nn.AdaptiveAvgPool2d(2), nn.Flatten(), nn.Linear(48, 3))
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.9)

    images = torch.randn(args.micro_batches, 8, 3, 12, 12)
    targets = torch.randint(0, 3, (args.micro_batches, 8))
    images[torch.arange(args.micro_batches)[:, None], torch.arange(8)[None, :], targets] += 0.5  # brighter channel

    model.train()
    optimizer.zero_grad()
    for i in range(args.micro_batches):
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(images[i]), targets[i]) / args.accum
        loss.backward()
        if (i + 1) % args.accum == 0:
            torch.nn.utils.clip_grad_value_(model.parameters(), clip_value=0.5)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
    print(f"FINAL loss={loss.item() * args.accum:.6f}")


if __name__ == "__main__":
    main()
