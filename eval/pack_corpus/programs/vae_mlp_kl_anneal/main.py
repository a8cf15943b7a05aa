"""A variational autoencoder (MLP encoder and decoder, reparameterisation trick) on synthetic 2-factor data
lifted to 20 dimensions; the KL term's weight is annealed linearly over the first steps; Adam. Samples
are drawn from the prior at the end under no_grad."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


class VAE(nn.Module):
    def __init__(self, d_in=20, hidden=64, latent=2):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU())
        self.mu = nn.Linear(hidden, latent)
        self.logvar = nn.Linear(hidden, latent)
        self.dec = nn.Sequential(nn.Linear(latent, hidden), nn.ReLU(), nn.Linear(hidden, d_in))

    def forward(self, x):
        h = self.enc(x)
        mu, logvar = self.mu(h), self.logvar(h)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        return self.dec(z), mu, logvar


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--anneal-steps", type=int, default=20)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    lift = torch.randn(2, 20)
    model = VAE()
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)

    for step in range(args.steps):
        factors = torch.randn(64, 2)
        x = torch.tanh(factors @ lift) + 0.05 * torch.randn(64, 20)
        recon, mu, logvar = model(x)
        rec_loss = F.mse_loss(recon, x, reduction="sum") / x.size(0)
        kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp()) / x.size(0)
        beta = min(1.0, step / args.anneal_steps)
        loss = rec_loss + beta * kl
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 10 == 0:
            print(f"step {step}: recon {rec_loss.item():.3f} kl {kl.item():.3f} beta {beta:.2f}")

    model.eval()
    with torch.no_grad():
        samples = model.dec(torch.randn(16, 2))
    print(f"FINAL loss={loss.item():.6f} sample_std={samples.std().item():.4f}")


if __name__ == "__main__":
    main()
