"""Tiny conditional GAN (pix2pix-style) on synthetic vectors: the generator is pre-trained with an L1 loss
for a few steps, then trained adversarially against a spectral-normalised discriminator.

When the adversarial phase starts, the discriminator (never used so far) is first run once in eval mode
as a sanity check of its output shape.
--bug: D.train() is not called afterwards, so the discriminator trains in eval mode: spectral_norm never
runs its power iteration, its u/v vectors stay at their random initial values and sigma is wrong.
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils import spectral_norm

D_COND, D_OUT = 8, 8


class Generator(nn.Module):
    def __init__(self, hidden=64):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(D_COND + 4, hidden), nn.ReLU(),
            nn.Linear(hidden, hidden), nn.ReLU(),
            nn.Linear(hidden, D_OUT),
        )

    def forward(self, cond, z):
        return self.net(torch.cat([cond, z], dim=1))


class Discriminator(nn.Module):
    def __init__(self, hidden=64):
        super().__init__()
        self.net = nn.Sequential(
            spectral_norm(nn.Linear(D_COND + D_OUT, hidden)), nn.LeakyReLU(0.2),
            spectral_norm(nn.Linear(hidden, hidden)), nn.LeakyReLU(0.2),
            spectral_norm(nn.Linear(hidden, 1)),
        )

    def forward(self, cond, y):
        return self.net(torch.cat([cond, y], dim=1))


def target_fn(cond, mix):
    return torch.tanh(cond @ mix) + 0.1 * cond.roll(1, dims=1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bug", action="store_true")
    parser.add_argument("--steps", type=int, default=24)
    parser.add_argument("--pretrain-steps", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lambda-l1", type=float, default=10.0)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    mix = torch.randn(D_COND, D_OUT) / D_COND ** 0.5

    G = Generator()
    D = Discriminator()
    opt_g = torch.optim.Adam(G.parameters(), lr=2e-3, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(D.parameters(), lr=2e-3, betas=(0.5, 0.999))

    G.train()
    for step in range(1, args.steps + 1):
        cond = torch.randn(args.batch_size, D_COND)
        real = target_fn(cond, mix)
        z = torch.randn(args.batch_size, 4)
        fake = G(cond, z)

        if step == args.pretrain_steps + 1:
            # adversarial phase starts: sanity check of the (so far unused) discriminator first
            D.eval()
            with torch.no_grad():
                score = D(cond[:4], real[:4])
            print(f"starting adversarial training; discriminator output shape {tuple(score.shape)}")
            if not args.bug:
                D.train()

        if step <= args.pretrain_steps:
            # generator warm-up: reconstruction loss only
            loss_g = F.l1_loss(fake, real)
            opt_g.zero_grad()
            loss_g.backward()
            opt_g.step()
            loss_d = torch.zeros(())
        else:
            # discriminator (hinge loss)
            loss_d = F.relu(1.0 - D(cond, real)).mean() + F.relu(1.0 + D(cond, fake.detach())).mean()
            opt_d.zero_grad()
            loss_d.backward()
            opt_d.step()
            # generator
            loss_g = -D(cond, fake).mean() + args.lambda_l1 * F.l1_loss(fake, real)
            opt_g.zero_grad()
            loss_g.backward()
            opt_g.step()

        if step % 6 == 0:
            print(f"step {step}: loss_d {loss_d.item():.4f} loss_g {loss_g.item():.4f}")

    with torch.no_grad():
        cond = torch.randn(256, D_COND)
        l1 = F.l1_loss(G(cond, torch.randn(256, 4)), target_fn(cond, mix)).item()
        first = D.net[0]
        w = first.weight_orig
        sigma_est = torch.dot(first.weight_u, w @ first.weight_v).item()
        sigma_true = torch.linalg.matrix_norm(w, ord=2).item()
    print(f"final G l1 {l1:.4f}")
    print(f"SYMPTOM sn_sigma_ratio={sigma_est / sigma_true:.4f}")


if __name__ == "__main__":
    main()
