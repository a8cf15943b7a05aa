"""Two-layer graph convolutional network for node classification, written in the functional style
(F.relu, F.dropout with training=self.training) and trained without an optimizer object: gradient descent
with weight decay written by hand under no_grad, gradients set to None by hand, and a validation accuracy
in eval mode every few epochs."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


class GCN(nn.Module):
    def __init__(self, features, hidden, classes, dropout=0.3):
        super().__init__()
        self.w1 = nn.Parameter(torch.empty(features, hidden))
        self.w2 = nn.Parameter(torch.empty(hidden, classes))
        nn.init.xavier_uniform_(self.w1)
        nn.init.xavier_uniform_(self.w2)
        self.dropout = dropout

    def forward(self, x, adj):
        h = F.relu(adj @ (x @ self.w1))
        h = F.dropout(h, self.dropout, training=self.training)
        return adj @ (h @ self.w2)


def make_graph(n=120, features=10, classes=3):
    labels = torch.randint(0, classes, (n,))
    x = torch.randn(n, features) + F.one_hot(labels, features).float() * 1.5
    same = (labels[:, None] == labels[None, :]).float()
    adj = ((torch.rand(n, n) < 0.05 + 0.1 * same).float() + torch.eye(n)).clamp(max=1)
    adj = adj / adj.sum(dim=1, keepdim=True)
    return x, adj, labels


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--lr", type=float, default=0.5)
    parser.add_argument("--weight-decay", type=float, default=5e-4)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    x, adj, labels = make_graph()
    train_idx, val_idx = torch.arange(0, 80), torch.arange(80, 120)
    model = GCN(x.shape[1], 16, 3)
    for epoch in range(args.epochs):
        model.train()
        loss = F.cross_entropy(model(x, adj)[train_idx], labels[train_idx])
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                p.mul_(1 - args.lr * args.weight_decay).sub_(args.lr * p.grad)
                p.grad = None
        if epoch % 10 == 9:
            model.eval()
            with torch.no_grad():
                val_acc = (model(x, adj)[val_idx].argmax(dim=1) == labels[val_idx]).float().mean().item()
            print(f"epoch {epoch}: loss {loss.item():.4f} val_acc {val_acc:.3f}")
    print(f"FINAL loss={loss.item():.6f} val_acc={val_acc:.4f}")


if __name__ == "__main__":
    main()
