"""A whole training step compiled as one function with @torch.compile (forward, loss and backward of a
small Transformer encoder regressor; backend aot_eager, see compile_mlp_adam), the AdamW step and a
CosineAnnealingLR outside it; inputs of one fixed shape so the step compiles once."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


class SetRegressor(nn.Module):
    """Predicts the mean of a set of vectors' first coordinates, permutation invariant."""

    def __init__(self, d=16):
        super().__init__()
        self.inp = nn.Linear(4, d)
        self.encoder = nn.TransformerEncoderLayer(d, nhead=2, dim_feedforward=32, dropout=0.0, batch_first=True)
        self.out = nn.Linear(d, 1)

    def forward(self, x):
        return self.out(self.encoder(self.inp(x)).mean(1)).squeeze(1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--backend", default="aot_eager")
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    model = SetRegressor()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.steps)

    @torch.compile(backend=args.backend)
    def forward_backward(x, y):
        loss = F.mse_loss(model(x), y)
        loss.backward()
        return loss.detach()

    model.train()
    for step in range(args.steps):
        x = torch.randn(16, 6, 4)
        y = x[:, :, 0].mean(1)
        optimizer.zero_grad(set_to_none=True)
        loss = forward_backward(x, y)
        optimizer.step()
        scheduler.step()
    print(f"FINAL loss={loss.item():.6f}")


if __name__ == "__main__":
    main()
