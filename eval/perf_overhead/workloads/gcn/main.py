"""Graph convolutional network (Kipf & Welling, pygcn) on a synthetic Cora-sized citation graph.

Two graph-convolution layers over a normalised sparse adjacency matrix, Adam with weight decay,
full-batch training: one iteration is one epoch over the graph. No torch_geometric.
Writes one wall time per training iteration (seconds) to ./iteration_times.txt, and the
process's CPU time per iteration to ./iteration_cpu_times.txt.
"""
import argparse
import math
import sys
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

try:
    from workload_common import IterationTimer, add_common_arguments
except ModuleNotFoundError:  # run in place: the shared module is in workloads/ (the runner's copies have it beside)
    sys.path.append(str(Path(__file__).resolve().parent.parent))
    from workload_common import IterationTimer, add_common_arguments


class GraphConvolution(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(in_features, out_features))
        self.bias = nn.Parameter(torch.empty(out_features))
        stdv = 1.0 / math.sqrt(out_features)
        nn.init.uniform_(self.weight, -stdv, stdv)
        nn.init.uniform_(self.bias, -stdv, stdv)

    def forward(self, input, adj):
        support = torch.mm(input, self.weight)
        return torch.spmm(adj, support) + self.bias


class GCN(nn.Module):
    def __init__(self, nfeat, nhid, nclass, dropout):
        super().__init__()
        self.gc1 = GraphConvolution(nfeat, nhid)
        self.gc2 = GraphConvolution(nhid, nclass)
        self.dropout = dropout

    def forward(self, x, adj):
        x = F.relu(self.gc1(x, adj))
        x = F.dropout(x, self.dropout, training=self.training)
        x = self.gc2(x, adj)
        return F.log_softmax(x, dim=1)


def synthetic_graph(num_nodes, num_edges, num_features, num_classes, generator):
    """A planted-partition graph: most edges join nodes of the same class; sparse binary features."""
    labels = torch.randint(0, num_classes, (num_nodes,), generator=generator)
    src = torch.randint(0, num_nodes, (num_edges,), generator=generator)
    same_class = torch.rand(num_edges, generator=generator) < 0.8
    candidates = torch.randint(0, num_nodes, (num_edges, 16), generator=generator)
    match = labels[candidates] == labels[src].unsqueeze(1)
    first_match = torch.where(match.any(1), match.float().argmax(1), torch.zeros_like(src))
    dst = torch.where(same_class, candidates[torch.arange(num_edges), first_match], candidates[:, 0])
    rows = torch.cat([src, dst, torch.arange(num_nodes)])
    cols = torch.cat([dst, src, torch.arange(num_nodes)])
    shape = (num_nodes, num_nodes)
    adj = torch.sparse_coo_tensor(torch.stack([rows, cols]), torch.ones(rows.numel()), shape,
                                  check_invariants=False).coalesce()
    idx = adj.indices()  # duplicate edges are merged; every kept edge has weight 1
    degree = torch.zeros(num_nodes).index_add_(0, idx[0], torch.ones(idx.shape[1]))
    d_inv_sqrt = degree.pow(-0.5)
    adj = torch.sparse_coo_tensor(idx, d_inv_sqrt[idx[0]] * d_inv_sqrt[idx[1]], shape,
                                  is_coalesced=True, check_invariants=False)
    class_words = torch.rand(num_classes, num_features, generator=generator) < 0.05
    features = (torch.rand(num_nodes, num_features, generator=generator) < 0.01) | (
        class_words[labels] & (torch.rand(num_nodes, num_features, generator=generator) < 0.3))
    features = features.float()
    features = features / features.sum(1, keepdim=True).clamp(min=1)  # row-normalise, as pygcn does
    return adj, features, labels


def main():
    parser = argparse.ArgumentParser(description="GCN on a synthetic citation graph")
    add_common_arguments(parser, default_seed=42)
    parser.add_argument("--num-nodes", type=int, default=2708)
    parser.add_argument("--num-edges", type=int, default=5429)
    parser.add_argument("--num-features", type=int, default=1433)
    parser.add_argument("--num-classes", type=int, default=7)
    parser.add_argument("--hidden", type=int, default=16)
    parser.add_argument("--dropout", type=float, default=0.5)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--weight-decay", type=float, default=5e-4)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    adj, features, labels = synthetic_graph(args.num_nodes, args.num_edges, args.num_features,
                                            args.num_classes, torch.Generator().manual_seed(args.seed))
    idx_train = torch.arange(0, min(140, args.num_nodes))
    adj, features, labels, idx_train = adj.to(device), features.to(device), labels.to(device), idx_train.to(device)

    model = GCN(nfeat=features.shape[1], nhid=args.hidden, nclass=args.num_classes, dropout=args.dropout).to(device)
    optimizer = optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)

    with IterationTimer(args.times_file, args.cpu_times_file, device) as timer:
        for epoch in range(args.iters):
            with timer.iteration():
                model.train()
                optimizer.zero_grad()
                output = model(features, adj)
                loss_train = F.nll_loss(output[idx_train], labels[idx_train])
                loss_train.backward()
                optimizer.step()
    print(f"gcn: {args.iters} iterations, last loss {loss_train.item():.4f}")


if __name__ == "__main__":
    main()
