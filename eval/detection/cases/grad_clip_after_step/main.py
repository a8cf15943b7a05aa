"""LSTM regressor on synthetic sequences (predict a weighted sum of the last two inputs), plain SGD with gradient-norm
clipping at 1.0.

--bug: clip_grad_norm_ is called after optimizer.step(), so the update uses the unclipped gradients and
clipping only rescales gradients that are about to be discarded.
"""
import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class SeqRegressor(nn.Module):
    def __init__(self, d_in=4, hidden=48):
        super().__init__()
        self.lstm = nn.LSTM(d_in, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out[:, -1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bug", action="store_true")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.3)
    parser.add_argument("--max-norm", type=float, default=1.0)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    x = torch.randn(256, 12, 4)
    w = torch.tensor([1.0, -0.5, 0.25, 2.0])
    y = (x[:, -1] @ w + 0.5 * x[:, -2] @ w).unsqueeze(1)
    train_loader = DataLoader(TensorDataset(x, y), batch_size=args.batch_size, shuffle=True,
                              generator=torch.Generator().manual_seed(args.seed))

    model = SeqRegressor()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    criterion = nn.MSELoss()

    step = 0
    max_update = 0.0
    for epoch in range(args.epochs):
        model.train()
        for xb, yb in train_loader:
            before = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
            loss = criterion(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            if args.bug:
                optimizer.step()
                grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_norm)
            else:
                grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_norm)
                optimizer.step()
            after = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
            max_update = max(max_update, ((after - before).norm() / args.lr).item())
            step += 1
            if step % 8 == 0:
                print(f"epoch {epoch} step {step}: loss {loss.item():.4f} grad norm {grad_norm.item():.2f}")

    print(f"SYMPTOM max_update_norm_over_lr={max_update:.4f} max_norm={args.max_norm}")


if __name__ == "__main__":
    main()
