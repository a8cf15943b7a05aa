"""Recommendation by matrix factorisation: user and item nn.Embedding tables plus per-user and per-item
biases, trained on synthetic ratings with MSE; Adagrad; RMSE on held-out ratings after each epoch."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


class MatrixFactorization(nn.Module):
    def __init__(self, users, items, dim=8):
        super().__init__()
        self.user = nn.Embedding(users, dim)
        self.item = nn.Embedding(items, dim)
        self.user_bias = nn.Embedding(users, 1)
        self.item_bias = nn.Embedding(items, 1)
        nn.init.normal_(self.user.weight, std=0.1)
        nn.init.normal_(self.item.weight, std=0.1)
        nn.init.zeros_(self.user_bias.weight)
        nn.init.zeros_(self.item_bias.weight)

    def forward(self, u, i):
        dot = (self.user(u) * self.item(i)).sum(1)
        return dot + self.user_bias(u).squeeze(1) + self.item_bias(i).squeeze(1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    users, items = 60, 40
    true_u, true_i = torch.randn(users, 3), torch.randn(items, 3)
    u = torch.randint(0, users, (1200,))
    i = torch.randint(0, items, (1200,))
    r = (true_u[u] * true_i[i]).sum(1) + 0.1 * torch.randn(1200)
    train, test = slice(0, 1000), slice(1000, 1200)

    model = MatrixFactorization(users, items)
    optimizer = torch.optim.Adagrad(model.parameters(), lr=0.1)
    for epoch in range(args.epochs):
        model.train()
        perm = torch.randperm(1000)
        for b in perm.split(100):
            loss = F.mse_loss(model(u[train][b], i[train][b]), r[train][b])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            rmse = F.mse_loss(model(u[test], i[test]), r[test]).sqrt().item()
        print(f"epoch {epoch}: train mse {loss.item():.4f} test rmse {rmse:.4f}")
    print(f"FINAL loss={loss.item():.6f} test_rmse={rmse:.4f}")


if __name__ == "__main__":
    main()
