"""MLP with GELU and LayerNorm, AdamW with its fused implementation (fused=True, on the CPU), gradient
norm clipping, a cosine schedule with a linear warm-up written as a LambdaLR."""
import argparse
import math

import torch
import torch.nn as nn


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    x = torch.randn(200, 12)
    y = (x @ torch.randn(12, 1)).sin()
    model = nn.Sequential(nn.Linear(12, 64), nn.LayerNorm(64), nn.GELU(), nn.Linear(64, 1))
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.01, fused=True)
    warmup = 5

    def schedule(step):
        if step < warmup:
            return (step + 1) / warmup
        return 0.5 * (1 + math.cos(math.pi * (step - warmup) / (args.steps - warmup)))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
    for step in range(args.steps):
        idx = torch.randint(0, len(x), (32,))
        loss = nn.functional.mse_loss(model(x[idx]), y[idx])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        scheduler.step()
        if step % 10 == 0:
            print(f"step {step}: loss {loss.item():.4f}")
    print(f"FINAL loss={loss.item():.6f}")


if __name__ == "__main__":
    main()
