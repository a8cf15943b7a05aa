"""A convolutional VAE on synthetic 1x16x16 images of random rectangles: Conv2d encoder, ConvTranspose2d
decoder, binary cross-entropy reconstruction; AdamW; the validation ELBO is computed each epoch in eval
mode under torch.inference_mode(); a DataLoader shuffles the training images."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def rectangles(n, gen):
    imgs = torch.zeros(n, 1, 16, 16)
    corners = torch.randint(0, 10, (n, 2), generator=gen)
    sizes = torch.randint(3, 7, (n, 2), generator=gen)
    for i in range(n):
        (r, c), (h, w) = corners[i].tolist(), sizes[i].tolist()
        imgs[i, 0, r:r + h, c:c + w] = 1.0
    return imgs


class ConvVAE(nn.Module):
    def __init__(self, latent=4):
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv2d(1, 8, 4, 2, 1), nn.ReLU(), nn.Conv2d(8, 16, 4, 2, 1), nn.ReLU(),
                                     nn.Flatten())
        self.fc_mu = nn.Linear(16 * 4 * 4, latent)
        self.fc_logvar = nn.Linear(16 * 4 * 4, latent)
        self.fc_dec = nn.Linear(latent, 16 * 4 * 4)
        self.decoder = nn.Sequential(nn.ConvTranspose2d(16, 8, 4, 2, 1), nn.ReLU(), nn.ConvTranspose2d(8, 1, 4, 2, 1))

    def forward(self, x):
        h = self.encoder(x)
        mu, logvar = self.fc_mu(h), self.fc_logvar(h)
        z = mu + torch.exp(0.5 * logvar) * torch.randn_like(mu)
        return self.decoder(self.fc_dec(z).view(-1, 16, 4, 4)), mu, logvar


def elbo_loss(logits, x, mu, logvar):
    rec = F.binary_cross_entropy_with_logits(logits, x, reduction="sum")
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return (rec + kld) / x.size(0)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    train_loader = DataLoader(TensorDataset(rectangles(128, gen)), batch_size=16, shuffle=True, generator=gen)
    val_images = rectangles(32, gen)

    model = ConvVAE()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for epoch in range(args.epochs):
        model.train()
        for (x,) in train_loader:
            logits, mu, logvar = model(x)
            loss = elbo_loss(logits, x, mu, logvar)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.inference_mode():
            logits, mu, logvar = model(val_images)
            val = elbo_loss(logits, val_images, mu, logvar).item()
        print(f"epoch {epoch}: train {loss.item():.3f} val {val:.3f}")
    print(f"FINAL loss={loss.item():.6f} val_elbo={val:.4f}")


if __name__ == "__main__":
    main()
