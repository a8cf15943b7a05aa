"""Variational autoencoder on synthetic 2-cluster data: MLP encoder and decoder with in-place LeakyReLU,
the fused Adam (`fused=True`), and a held-out ELBO computed in eval mode after every epoch."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class VAE(nn.Module):
    def __init__(self, dim=12, hidden=48, latent=3):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(dim, hidden), nn.LeakyReLU(0.1, inplace=True))
        self.mu = nn.Linear(hidden, latent)
        self.logvar = nn.Linear(hidden, latent)
        self.decoder = nn.Sequential(nn.Linear(latent, hidden), nn.LeakyReLU(0.1, inplace=True), nn.Linear(hidden, dim))

    def forward(self, x):
        h = self.encoder(x)
        mu, logvar = self.mu(h), self.logvar(h)
        z = mu + torch.randn_like(mu) * (0.5 * logvar).exp() if self.training else mu
        return self.decoder(z), mu, logvar


def elbo_loss(recon, x, mu, logvar):
    kl = -0.5 * (1 + logvar - mu.pow(2) - logvar.exp()).sum(dim=1).mean()
    return F.mse_loss(recon, x, reduction="none").sum(dim=1).mean() + kl


def make_data(n, dim=12):
    centers = torch.randn(2, dim) * 2
    return centers[torch.randint(0, 2, (n,))] + 0.3 * torch.randn(n, dim)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=4)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    train = DataLoader(TensorDataset(make_data(256)), batch_size=32, shuffle=True)
    held_out = make_data(64)
    model = VAE()
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3, fused=True)
    for epoch in range(args.epochs):
        model.train()
        for (x,) in train:
            optimizer.zero_grad(set_to_none=True)
            recon, mu, logvar = model(x)
            loss = elbo_loss(recon, x, mu, logvar)
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            recon, mu, logvar = model(held_out)
            val = elbo_loss(recon, held_out, mu, logvar).item()
        print(f"epoch {epoch}: loss {loss.item():.4f} held_out {val:.4f}")
    print(f"FINAL loss={loss.item():.6f} held_out={val:.4f}")


if __name__ == "__main__":
    main()
