"""Gradient accumulation over 4 micro-batches (loss scaled by 1/accum, zero_grad after each optimizer
step), AdamW with decoupled weight decay on weights only (two parameter groups), linear warmup then
linear decay through LambdaLR stepped per optimizer step."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--accum", type=int, default=4)
    parser.add_argument("--updates", type=int, default=8)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(24, 64), nn.LayerNorm(64), nn.SiLU(), nn.Linear(64, 10))
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05},
                                   {"params": no_decay, "weight_decay": 0.0}], lr=2e-3)
    warmup = 3
    schedule = lambda u: (u + 1) / warmup if u < warmup else max(0.1, (args.updates - u) / (args.updates - warmup))
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)

    x = torch.randn(args.updates * args.accum * 16, 24)
    y = (x[:, :10] + 0.1 * torch.randn(x.shape[0], 10)).argmax(1)
    batches = list(zip(x.split(16), y.split(16)))

    optimizer.zero_grad()
    for i, (xb, yb) in enumerate(batches):
        loss = F.cross_entropy(model(xb), yb) / args.accum
        loss.backward()
        if (i + 1) % args.accum == 0:
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
            print(f"update {(i + 1) // args.accum}: loss {loss.item() * args.accum:.4f} lr {scheduler.get_last_lr()[0]:.2e}")
    print(f"FINAL loss={loss.item() * args.accum:.6f}")


if __name__ == "__main__":
    main()
