"""Graph-level regression with a message-passing network written by hand: small random graphs are batched
into one disjoint graph (edge_index offsets, a batch vector), messages are computed per edge by an MLP over
(source, target, edge feature) and summed with index_add_, graphs are read out by a sum pool; RMSprop."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


def random_graph(gen):
    n = int(torch.randint(4, 9, (1,), generator=gen))
    src = torch.randint(0, n, (2 * n,), generator=gen)
    dst = torch.randint(0, n, (2 * n,), generator=gen)
    keep = src != dst
    edge_index = torch.stack([src[keep], dst[keep]])
    x = torch.randn(n, 5, generator=gen)
    edge_attr = torch.rand(edge_index.size(1), 1, generator=gen)
    target = (x[:, 0].sum() + 0.1 * edge_index.size(1)).unsqueeze(0)
    return x, edge_index, edge_attr, target


def collate(graphs):
    xs, eis, eas, ys, batch, offset = [], [], [], [], [], 0
    for i, (x, ei, ea, y) in enumerate(graphs):
        xs.append(x)
        eis.append(ei + offset)
        eas.append(ea)
        ys.append(y)
        batch.append(torch.full((x.size(0),), i))
        offset += x.size(0)
    return torch.cat(xs), torch.cat(eis, 1), torch.cat(eas), torch.cat(ys), torch.cat(batch)


class MessagePassing(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.message = nn.Sequential(nn.Linear(2 * dim + 1, dim), nn.ReLU(), nn.Linear(dim, dim))
        self.update = nn.GRUCell(dim, dim)

    def forward(self, h, edge_index, edge_attr):
        src, dst = edge_index
        msg = self.message(torch.cat([h[src], h[dst], edge_attr], dim=1))
        agg = torch.zeros_like(h).index_add_(0, dst, msg)
        return self.update(agg, h)


class MPNN(nn.Module):
    def __init__(self, dim=24, rounds=2):
        super().__init__()
        self.embed = nn.Linear(5, dim)
        self.layers = nn.ModuleList([MessagePassing(dim) for _ in range(rounds)])
        self.readout = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, 1))

    def forward(self, x, edge_index, edge_attr, batch, n_graphs):
        h = self.embed(x)
        for layer in self.layers:
            h = layer(h, edge_index, edge_attr)
        pooled = torch.zeros(n_graphs, h.size(1)).index_add_(0, batch, h)
        return self.readout(pooled).squeeze(1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    graphs = [random_graph(gen) for _ in range(96)]
    model = MPNN()
    optimizer = torch.optim.RMSprop(model.parameters(), lr=2e-3)

    for epoch in range(args.epochs):
        order = torch.randperm(len(graphs), generator=gen).tolist()
        for start in range(0, len(graphs), 12):
            x, ei, ea, y, batch = collate([graphs[i] for i in order[start:start + 12]])
            pred = model(x, ei, ea, batch, y.size(0))
            loss = F.mse_loss(pred, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: loss {loss.item():.4f}")
    print(f"FINAL loss={loss.item():.6f}")


if __name__ == "__main__":
    main()
