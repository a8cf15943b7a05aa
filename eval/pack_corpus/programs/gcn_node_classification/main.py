"""Semi-supervised node classification with a two-layer GCN written by hand (symmetric normalised adjacency
with self-loops as a sparse tensor, torch.sparse.mm), full-batch training on a synthetic stochastic block
graph, Adam with weight decay on the first layer only, train/validation masks, early stopping on the
validation accuracy."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


def block_graph(n_per, blocks, p_in, p_out, gen):
    n = n_per * blocks
    labels = torch.arange(blocks).repeat_interleave(n_per)
    same = labels[:, None] == labels[None, :]
    prob = torch.where(same, torch.tensor(p_in), torch.tensor(p_out))
    adj = (torch.rand(n, n, generator=gen) < prob).float().triu(1)
    adj = adj + adj.t()
    feats = torch.cat([F.one_hot(labels, blocks).float() * 0.5, torch.randn(n, 12, generator=gen)], dim=1)
    return adj, feats, labels


def normalise(adj):
    a = adj + torch.eye(adj.size(0))
    d = a.sum(1).pow(-0.5)
    return (d[:, None] * a * d[None, :]).to_sparse()


class GCNLayer(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.linear = nn.Linear(cin, cout, bias=False)
        self.bias = nn.Parameter(torch.zeros(cout))

    def forward(self, x, a_hat):
        return torch.sparse.mm(a_hat, self.linear(x)) + self.bias


class GCN(nn.Module):
    def __init__(self, cin, hidden, classes):
        super().__init__()
        self.conv1 = GCNLayer(cin, hidden)
        self.conv2 = GCNLayer(hidden, classes)

    def forward(self, x, a_hat):
        x = F.dropout(F.relu(self.conv1(x, a_hat)), p=0.5, training=self.training)
        return self.conv2(x, a_hat)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--patience", type=int, default=10)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    adj, x, y = block_graph(40, 3, 0.15, 0.02, gen)
    a_hat = normalise(adj)
    perm = torch.randperm(len(y), generator=gen)
    train_mask, val_mask = perm[:30], perm[30:70]

    model = GCN(x.size(1), 16, 3)
    optimizer = torch.optim.Adam([{"params": model.conv1.parameters(), "weight_decay": 5e-4},
                                  {"params": model.conv2.parameters(), "weight_decay": 0.0}], lr=0.02)
    best, since_best = 0.0, 0
    for epoch in range(args.epochs):
        model.train()
        optimizer.zero_grad()
        out = model(x, a_hat)
        loss = F.cross_entropy(out[train_mask], y[train_mask])
        loss.backward()
        optimizer.step()

        model.eval()
        with torch.no_grad():
            val_acc = (model(x, a_hat)[val_mask].argmax(1) == y[val_mask]).float().mean().item()
        if val_acc > best:
            best, since_best = val_acc, 0
        else:
            since_best += 1
        if since_best >= args.patience:
            print(f"early stop at epoch {epoch}")
            break
    print(f"FINAL loss={loss.item():.6f} best_val_acc={best:.4f}")


if __name__ == "__main__":
    main()
