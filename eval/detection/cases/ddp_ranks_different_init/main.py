"""DDP training (2 ranks, gloo, CPU) of a small MLP regressor with a custom weight init and per-rank
seeding (so that each rank draws different input-noise augmentation).

--bug: the custom init is applied after wrapping the model in DDP. DDP broadcast rank 0's weights when it
was constructed; the re-initialisation afterwards draws from each rank's own RNG, so the replicas start
from different weights. Gradients are still averaged, so both ranks apply identical updates to
different weights and never agree.
"""
import argparse
import math

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class Regressor(nn.Module):
    def __init__(self, d_in=10, hidden=64):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(d_in, hidden), nn.SiLU(),
            nn.Linear(hidden, hidden), nn.SiLU(),
            nn.Linear(hidden, 1),
        )

    def forward(self, x):
        return self.layers(x)


def init_weights(m):
    if isinstance(m, nn.Linear):
        nn.init.kaiming_uniform_(m.weight, a=math.sqrt(5), nonlinearity="leaky_relu")
        nn.init.zeros_(m.bias)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bug", action="store_true")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--noise", type=float, default=0.05)
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(args.seed + rank)  # per-rank seed: different augmentation noise on each rank

    gen = torch.Generator().manual_seed(args.seed)
    x = torch.randn(384, 10, generator=gen)
    y = (x[:, :5].sum(dim=1, keepdim=True) / 2).tanh() + 0.1 * x[:, 5:6]
    train_set = TensorDataset(x, y)
    sampler = DistributedSampler(train_set, shuffle=True, seed=args.seed)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, sampler=sampler)

    model = Regressor()
    if not args.bug:
        model.apply(init_weights)
    model = DDP(model)
    if args.bug:
        model.apply(init_weights)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    step = 0
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        model.train()
        for xb, yb in train_loader:
            xb = xb + args.noise * torch.randn_like(xb)
            loss = F.mse_loss(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            if step % 8 == 0 and rank == 0:
                print(f"epoch {epoch} step {step}: loss {loss.item():.4f}")

    flat = torch.cat([p.detach().reshape(-1) for p in model.module.parameters()])
    gathered = [torch.zeros_like(flat) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, flat)
    with torch.no_grad():
        full_loss = F.mse_loss(model.module(x), y)
    dist.all_reduce(full_loss)
    if rank == 0:
        diff = (gathered[0] - gathered[1]).abs().max().item()
        print(f"final loss (mean over ranks) {full_loss.item() / dist.get_world_size():.4f}")
        print(f"SYMPTOM rank_weight_diff={diff:.6f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
