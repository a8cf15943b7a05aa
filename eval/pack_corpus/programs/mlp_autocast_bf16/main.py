"""Mixed precision on the CPU: forward and loss under torch.autocast("cpu", dtype=torch.bfloat16), backward
and the AdamW step outside it in float32 (no GradScaler: bfloat16 needs none)."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        return x + self.ff(self.norm(x))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(32, 64), Block(64), Block(64), nn.Linear(64, 8))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    teacher = torch.randn(32, 8)

    for step in range(args.steps):
        x = torch.randn(64, 32)
        y = (x @ teacher).argmax(1)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = model(x)
            loss = F.cross_entropy(logits, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if step % 5 == 0:
            print(f"step {step}: loss {loss.item():.4f} ({logits.dtype})")
    print(f"FINAL loss={loss.item():.6f}")


if __name__ == "__main__":
    main()
