"""Full-batch node classification with a hand-written 2-layer graph convolutional network (GCN) under DDP
on 2 CPU ranks (gloo). A synthetic stochastic-block-model graph with 3 communities and noisy node features
is built identically on every rank, with the symmetrically normalized dense adjacency
D^-1/2 (A + I) D^-1/2; each rank computes its loss on its own share of the training nodes (a boolean mask)
and DDP averages the gradients. RMSprop, no scheduler; validation and test accuracy are summed over ranks
with all_reduce."""
import argparse

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


class GraphConv(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x, adj):
        return adj @ self.linear(x)


class GCN(nn.Module):
    def __init__(self, in_features, hidden, num_classes, dropout=0.5):
        super().__init__()
        self.conv1 = GraphConv(in_features, hidden)
        self.conv2 = GraphConv(hidden, num_classes)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, adj):
        h = self.dropout(F.relu(self.conv1(x, adj)))
        return self.conv2(h, adj)


def make_graph(num_nodes, num_classes, num_features, generator):
    labels = torch.randint(0, num_classes, (num_nodes,), generator=generator)
    same = labels[:, None] == labels[None, :]
    probs = torch.where(same, torch.tensor(0.08), torch.tensor(0.04))
    upper = torch.triu(torch.rand(num_nodes, num_nodes, generator=generator) < probs, diagonal=1).float()
    adj = upper + upper.T + torch.eye(num_nodes)
    deg_inv_sqrt = adj.sum(1).rsqrt()
    adj_norm = deg_inv_sqrt[:, None] * adj * deg_inv_sqrt[None, :]
    centers = torch.randn(num_classes, num_features, generator=generator)
    features = centers[labels] * 0.3 + torch.randn(num_nodes, num_features, generator=generator)
    return features, adj_norm, labels


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--steps", type=int, default=25)
    parser.add_argument("--lr", type=float, default=5e-3)
    parser.add_argument("--hidden", type=int, default=16)
    parser.add_argument("--num-nodes", type=int, default=150)
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank, world_size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(args.seed)

    num_classes, num_features = 3, 12
    graph_gen = torch.Generator().manual_seed(args.seed)
    features, adj, labels = make_graph(args.num_nodes, num_classes, num_features, graph_gen)
    perm = torch.randperm(args.num_nodes, generator=graph_gen)
    n_train, n_val = args.num_nodes // 2, args.num_nodes // 4
    train_idx, val_idx, test_idx = perm[:n_train], perm[n_train:n_train + n_val], perm[n_train + n_val:]

    # this rank's training nodes; validation and test nodes are split the same way for evaluation
    def rank_mask(idx):
        mask = torch.zeros(args.num_nodes, dtype=torch.bool)
        mask[idx[rank::world_size]] = True
        return mask

    train_mask, val_mask, test_mask = rank_mask(train_idx), rank_mask(val_idx), rank_mask(test_idx)

    model = DDP(GCN(num_features, args.hidden, num_classes))
    optimizer = torch.optim.RMSprop(model.parameters(), lr=args.lr)

    def evaluate(mask):
        model.eval()
        with torch.no_grad():
            pred = model(features, adj).argmax(1)
        model.train()
        counts = torch.tensor([(pred[mask] == labels[mask]).sum().item(), mask.sum().item()], dtype=torch.float)
        dist.all_reduce(counts, op=dist.ReduceOp.SUM)
        return (counts[0] / counts[1]).item()

    model.train()
    for step in range(1, args.steps + 1):
        optimizer.zero_grad()
        out = model(features, adj)
        loss = F.cross_entropy(out[train_mask], labels[train_mask])
        loss.backward()
        optimizer.step()

        global_loss = loss.detach().clone()
        dist.all_reduce(global_loss, op=dist.ReduceOp.SUM)
        global_loss /= world_size
        if step % 5 == 0:
            val_acc = evaluate(val_mask)
            if rank == 0:
                print(f"step {step}: train loss {global_loss.item():.4f}  val acc {val_acc:.3f}")

    val_acc, test_acc = evaluate(val_mask), evaluate(test_mask)
    if rank == 0:
        print(f"FINAL train_loss={global_loss.item():.6f} val_acc={val_acc:.4f} test_acc={test_acc:.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
