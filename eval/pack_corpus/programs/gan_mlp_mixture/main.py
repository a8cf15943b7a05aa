"""A GAN on a 2-D mixture of eight Gaussians on a ring: generator and discriminator MLPs, two Adam
optimizers (betas 0.5, 0.999), the discriminator step on real and detached fake samples, then the
generator step with the non-saturating loss; both models switch between train() and eval() for a sample
at the end."""
import argparse
import math

import torch
import torch.nn as nn


def ring_samples(n):
    k = torch.randint(0, 8, (n,))
    angle = k.float() * 2 * math.pi / 8
    centers = torch.stack([torch.cos(angle), torch.sin(angle)], 1) * 2
    return centers + 0.05 * torch.randn(n, 2)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--latent", type=int, default=8)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    netG = nn.Sequential(nn.Linear(args.latent, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 2))
    netD = nn.Sequential(nn.Linear(2, 64), nn.LeakyReLU(0.2), nn.Linear(64, 64), nn.LeakyReLU(0.2), nn.Linear(64, 1))
    optG = torch.optim.Adam(netG.parameters(), lr=1e-3, betas=(0.5, 0.999))
    optD = torch.optim.Adam(netD.parameters(), lr=1e-3, betas=(0.5, 0.999))
    criterion = nn.BCEWithLogitsLoss()

    for step in range(args.steps):
        real = ring_samples(64)
        noise = torch.randn(64, args.latent)
        fake = netG(noise)

        optD.zero_grad()
        loss_d = criterion(netD(real), torch.ones(64, 1)) + criterion(netD(fake.detach()), torch.zeros(64, 1))
        loss_d.backward()
        optD.step()

        optG.zero_grad()
        loss_g = criterion(netD(fake), torch.ones(64, 1))
        loss_g.backward()
        optG.step()
        if step % 10 == 0:
            print(f"step {step}: loss_d {loss_d.item():.4f} loss_g {loss_g.item():.4f}")

    netG.eval()
    with torch.no_grad():
        radius = netG(torch.randn(256, args.latent)).norm(dim=1).mean().item()
    print(f"FINAL loss_d={loss_d.item():.6f} loss_g={loss_g.item():.6f} radius={radius:.4f}")


if __name__ == "__main__":
    main()
