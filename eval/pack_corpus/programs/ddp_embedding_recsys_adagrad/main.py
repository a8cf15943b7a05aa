"""A matrix-factorisation recommender (user and item nn.Embedding factors, their dot product plus user, item
and global bias terms) trained with DistributedDataParallel on 2 CPU ranks (gloo) on synthetic ratings drawn
from hidden low-rank tastes: every rank takes its own strided shard of the shuffled ratings and of a
held-out split, Adagrad with a small L2 penalty on the factors of the batch, the epoch's training loss and
the test RMSE summed over ranks with all_reduce for logging; rank 0 logs."""
import argparse

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


class MatrixFactorization(nn.Module):
    def __init__(self, num_users, num_items, dim=8):
        super().__init__()
        self.user_factors = nn.Embedding(num_users, dim)
        self.item_factors = nn.Embedding(num_items, dim)
        self.user_bias = nn.Embedding(num_users, 1)
        self.item_bias = nn.Embedding(num_items, 1)
        self.global_bias = nn.Parameter(torch.zeros(1))
        nn.init.normal_(self.user_factors.weight, std=0.1)
        nn.init.normal_(self.item_factors.weight, std=0.1)
        nn.init.zeros_(self.user_bias.weight)
        nn.init.zeros_(self.item_bias.weight)

    def forward(self, users, items):
        u, v = self.user_factors(users), self.item_factors(items)
        pred = (u * v).sum(1) + self.user_bias(users).squeeze(1) + self.item_bias(items).squeeze(1)
        return pred + self.global_bias, u, v


def make_ratings(num_users, num_items, n, generator):
    tastes = torch.randn(num_users, 3, generator=generator)
    traits = torch.randn(num_items, 3, generator=generator)
    users = torch.randint(0, num_users, (n,), generator=generator)
    items = torch.randint(0, num_items, (n,), generator=generator)
    ratings = 3.0 + (tastes[users] * traits[items]).sum(1) + 0.3 * torch.randn(n, generator=generator)
    return users, items, ratings.clamp(1.0, 5.0)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--l2", type=float, default=1e-3)
    parser.add_argument("--num-users", type=int, default=64)
    parser.add_argument("--num-items", type=int, default=48)
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(args.seed)

    # Every rank builds the same ratings table and keeps its own shard of it.
    gen = torch.Generator().manual_seed(args.seed)
    users, items, ratings = make_ratings(args.num_users, args.num_items, 2560, gen)
    order = torch.randperm(len(ratings), generator=gen)
    train_idx, test_idx = order[:2048], order[2048:]
    train_idx, test_idx = train_idx[rank::world], test_idx[rank::world]

    model = DDP(MatrixFactorization(args.num_users, args.num_items))
    optimizer = torch.optim.Adagrad(model.parameters(), lr=args.lr)

    for epoch in range(args.epochs):
        model.train()
        perm = train_idx[torch.randperm(len(train_idx), generator=gen)]
        stats = torch.zeros(2)
        for start in range(0, len(perm), args.batch_size):
            batch = perm[start:start + args.batch_size]
            pred, u, v = model(users[batch], items[batch])
            mse = F.mse_loss(pred, ratings[batch])
            loss = mse + args.l2 * (u.pow(2).sum(1) + v.pow(2).sum(1)).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            stats += torch.tensor([mse.item() * len(batch), len(batch)])
        dist.all_reduce(stats, op=dist.ReduceOp.SUM)

        model.eval()
        with torch.no_grad():
            pred, _, _ = model(users[test_idx], items[test_idx])
            test_stats = torch.tensor([F.mse_loss(pred.clamp(1.0, 5.0), ratings[test_idx], reduction="sum").item(),
                                       len(test_idx)])
        dist.all_reduce(test_stats, op=dist.ReduceOp.SUM)
        train_mse = (stats[0] / stats[1]).item()
        test_rmse = (test_stats[0] / test_stats[1]).sqrt().item()
        if rank == 0:
            print(f"epoch {epoch}: train mse {train_mse:.4f}, test rmse {test_rmse:.4f}")

    if rank == 0:
        print(f"FINAL loss={train_mse:.6f} test_rmse={test_rmse:.4f}")
    dist.barrier()  # every rank is done before the group is torn down
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
