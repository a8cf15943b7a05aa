"""An MLP regressor trained in mixed precision (bfloat16 autocast on the CPU) with a GradScaler and
gradient-norm clipping, as the PyTorch AMP recipe writes it.

--bug: the gradients are clipped before `scaler.unscale_(optimizer)`: clipping sees the scaled gradients
(the loss scale times larger), so the norm it compares with max_norm is meaningless and it shrinks every
gradient by the scale factor; the step then applies gradients far smaller than intended. Nothing fails,
training just crawls.
"""
import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bug", action="store_true")
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    x = torch.randn(256, 16)
    y = (x @ torch.randn(16, 1)).tanh()
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True,
                        generator=torch.Generator().manual_seed(args.seed))
    model = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 10)
    for epoch in range(args.epochs):
        model.train()
        for xb, yb in loader:
            optimizer.zero_grad()
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = nn.functional.mse_loss(model(xb).float(), yb)
            scaler.scale(loss).backward()
            if args.bug:
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                scaler.unscale_(optimizer)
            else:
                scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
        print(f"epoch {epoch}: loss {loss.item():.4f}")
    with torch.no_grad():
        final = nn.functional.mse_loss(model(x), y).item()
    print(f"SYMPTOM final_mse={final:.4f}")


if __name__ == "__main__":
    main()
