"""A GAN trained data-parallel on 2 CPU ranks (gloo): generator and discriminator MLPs each wrapped in
DistributedDataParallel, one Adam optimizer per network; each rank draws its own real samples from a 5x5
grid of 2-D Gaussians and its own noise, the discriminator is updated on a batch of real and detached fake
samples, then the generator with the non-saturating loss. At the end the losses are averaged over ranks and
rank 0 measures how many generated points land near a grid centre."""
import argparse

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

GRID = torch.tensor([(x, y) for x in range(-2, 3) for y in range(-2, 3)], dtype=torch.float32)


def grid_samples(n, generator, std=0.05):
    centres = GRID[torch.randint(0, len(GRID), (n,), generator=generator)]
    return centres + std * torch.randn(n, 2, generator=generator)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--latent", type=int, default=4)
    parser.add_argument("--lr", type=float, default=1e-3)
    args = parser.parse_args()

    dist.init_process_group(backend="gloo")
    rank = dist.get_rank()
    torch.manual_seed(args.seed)
    data_gen = torch.Generator().manual_seed(args.seed * 1000 + rank)

    netG = DDP(nn.Sequential(nn.Linear(args.latent, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(),
                             nn.Linear(128, 2)))
    netD = DDP(nn.Sequential(nn.Linear(2, 128), nn.LeakyReLU(0.2), nn.Linear(128, 128), nn.LeakyReLU(0.2),
                             nn.Linear(128, 1)))
    optimizerG = torch.optim.Adam(netG.parameters(), lr=args.lr, betas=(0.5, 0.9))
    optimizerD = torch.optim.Adam(netD.parameters(), lr=args.lr, betas=(0.5, 0.9))
    b = args.batch_size
    real_label, fake_label = torch.ones(b, 1), torch.zeros(b, 1)

    netG.train()
    netD.train()
    for step in range(args.steps):
        real = grid_samples(b, data_gen)
        noise = torch.randn(b, args.latent, generator=data_gen)
        fake = netG(noise)

        optimizerD.zero_grad()
        logits = netD(torch.cat([real, fake.detach()]))
        loss_d = F.binary_cross_entropy_with_logits(logits, torch.cat([real_label, fake_label]))
        loss_d.backward()
        optimizerD.step()

        optimizerG.zero_grad()
        loss_g = F.binary_cross_entropy_with_logits(netD(fake), real_label)
        loss_g.backward()
        optimizerG.step()

        if rank == 0 and step % 20 == 0:
            print(f"step {step}: loss_d {loss_d.item():.4f} loss_g {loss_g.item():.4f}")

    losses = torch.tensor([loss_d.item(), loss_g.item()])
    dist.all_reduce(losses, op=dist.ReduceOp.AVG)
    if rank == 0:
        generator = netG.module.eval()
        with torch.no_grad():
            samples = generator(torch.randn(512, args.latent, generator=data_gen))
        near = (torch.cdist(samples, GRID).min(1).values < 0.25).float().mean().item()
        print(f"FINAL loss_d={losses[0].item():.6f} loss_g={losses[1].item():.6f} near_centre={near:.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
