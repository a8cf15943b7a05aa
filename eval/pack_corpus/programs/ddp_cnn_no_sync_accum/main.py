"""DDP with gradient accumulation: the first micro-batches of each accumulation window run inside
model.no_sync() so gradients are all-reduced only on the last one; a small CNN on synthetic images, AdamW
with a StepLR per optimizer step, gradient clipping, 2 CPU ranks (gloo) each on its own data shard."""
import argparse
import contextlib

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--micro-batches", type=int, default=12)
    parser.add_argument("--accum", type=int, default=3)
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(args.seed)  # same init on every rank (DDP broadcasts rank 0's anyway)
    net = nn.Sequential(nn.Conv2d(1, 6, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 12, 3), nn.ReLU(),
                        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(12, 3))
    model = DistributedDataParallel(net)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.7)

    data_gen = torch.Generator().manual_seed(args.seed * 100 + rank)  # each rank its own shard
    images = torch.randn(args.micro_batches, 8, 1, 12, 12, generator=data_gen)
    labels = (images.mean(dim=(2, 3, 4)) * 10).long().clamp(-1, 1) + 1

    model.train()
    for i in range(args.micro_batches):
        last_in_window = (i + 1) % args.accum == 0
        ctx = contextlib.nullcontext() if last_in_window else model.no_sync()
        with ctx:
            loss = F.cross_entropy(model(images[i]), labels[i]) / args.accum
            loss.backward()
        if last_in_window:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
            if rank == 0:
                print(f"update {(i + 1) // args.accum}: loss {loss.item() * args.accum:.4f}")
    if rank == 0:
        print(f"FINAL loss={loss.item() * args.accum:.6f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
