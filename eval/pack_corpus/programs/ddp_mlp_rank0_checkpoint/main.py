"""DistributedDataParallel on 2 CPU ranks (gloo): a DistributedSampler with set_epoch, SGD with momentum,
the epoch's mean loss averaged over ranks with all_reduce, rank 0 saving model.module.state_dict() after
each epoch behind a barrier, and every rank reloading the last checkpoint at the end
(map_location="cpu")."""
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--ckpt", default="ddp_checkpoint.pt")
    args = parser.parse_args()

    dist.init_process_group(backend="gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(args.seed)

    x = torch.randn(256, 12)
    y = (x[:, :4].sum(1) > 0).long()
    dataset = TensorDataset(x, y)
    sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=True, seed=args.seed)
    loader = DataLoader(dataset, batch_size=16, sampler=sampler)

    model = DDP(nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 2)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        model.train()
        total = torch.zeros(2)
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            optimizer.step()
            total += torch.tensor([loss.item() * len(yb), len(yb)])
        dist.all_reduce(total, op=dist.ReduceOp.SUM)
        if rank == 0:
            torch.save({"epoch": epoch, "model": model.module.state_dict()}, args.ckpt)
            print(f"epoch {epoch}: mean loss {total[0] / total[1]:.4f}")
        dist.barrier()

    state = torch.load(args.ckpt, map_location="cpu")
    model.module.load_state_dict(state["model"])
    dist.barrier()
    if rank == 0:
        os.remove(args.ckpt)
        print(f"FINAL loss={(total[0] / total[1]).item():.6f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
