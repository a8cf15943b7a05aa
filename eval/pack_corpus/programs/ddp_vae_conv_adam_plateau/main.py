"""DDP convolutional variational autoencoder on 2 CPU ranks (gloo) over synthetic 1x16x16 images of
Gaussian blobs: a strided-conv encoder to a 4-d latent (mean and log-variance), the reparameterization
trick in training mode, a transposed-conv decoder, and the loss BCE reconstruction + KL. Adam, a
DistributedSampler with set_epoch, a validation pass per epoch whose loss is summed over ranks with
all_reduce and drives ReduceLROnPlateau, and rank 0 saving model.module.state_dict() (with the optimizer
and scheduler state) after every epoch behind a barrier; the checkpoint is removed at the end."""
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class ConvVAE(nn.Module):
    def __init__(self, latent_dim=4):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Conv2d(1, 8, 4, stride=2, padding=1), nn.ReLU(),   # 8x8
            nn.Conv2d(8, 16, 4, stride=2, padding=1), nn.ReLU(),  # 4x4
            nn.Flatten(),
        )
        self.fc_mu = nn.Linear(16 * 4 * 4, latent_dim)
        self.fc_logvar = nn.Linear(16 * 4 * 4, latent_dim)
        self.fc_dec = nn.Linear(latent_dim, 16 * 4 * 4)
        self.decoder = nn.Sequential(
            nn.ConvTranspose2d(16, 8, 4, stride=2, padding=1), nn.ReLU(),  # 8x8
            nn.ConvTranspose2d(8, 1, 4, stride=2, padding=1),              # 16x16 logits
        )

    def forward(self, x):
        h = self.encoder(x)
        mu, logvar = self.fc_mu(h), self.fc_logvar(h)
        if self.training:
            z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        else:
            z = mu
        recon_logits = self.decoder(self.fc_dec(z).view(-1, 16, 4, 4))
        return recon_logits, mu, logvar


def vae_loss(recon_logits, x, mu, logvar):
    """Summed over the batch: BCE reconstruction + KL(q(z|x) || N(0, I))."""
    recon = F.binary_cross_entropy_with_logits(recon_logits, x, reduction="sum")
    kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return recon + kl


def make_blobs(n, generator, size=16):
    coords = torch.arange(size, dtype=torch.float)
    cy = torch.rand(n, 1, 1, generator=generator) * (size - 6) + 3
    cx = torch.rand(n, 1, 1, generator=generator) * (size - 6) + 3
    sigma = torch.rand(n, 1, 1, generator=generator) * 1.5 + 1.0
    d2 = (coords[None, :, None] - cy) ** 2 + (coords[None, None, :] - cx) ** 2
    return torch.exp(-d2 / (2 * sigma ** 2)).unsqueeze(1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--ckpt", default="vae_checkpoint.pt")
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank, world_size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(args.seed)

    data_gen = torch.Generator().manual_seed(args.seed)
    train_set = TensorDataset(make_blobs(256, data_gen))
    val_set = TensorDataset(make_blobs(64, data_gen))
    train_sampler = DistributedSampler(train_set, num_replicas=world_size, rank=rank, shuffle=True,
                                       seed=args.seed)
    val_sampler = DistributedSampler(val_set, num_replicas=world_size, rank=rank, shuffle=False)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, sampler=train_sampler)
    val_loader = DataLoader(val_set, batch_size=args.batch_size, sampler=val_sampler)

    model = DDP(ConvVAE(latent_dim=4))
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode="min", factor=0.5, patience=0)

    for epoch in range(args.epochs):
        train_sampler.set_epoch(epoch)
        model.train()
        train_stats = torch.zeros(2)
        for (x,) in train_loader:
            optimizer.zero_grad()
            recon_logits, mu, logvar = model(x)
            loss = vae_loss(recon_logits, x, mu, logvar) / len(x)
            loss.backward()
            optimizer.step()
            train_stats += torch.tensor([loss.item() * len(x), len(x)])

        model.eval()
        val_stats = torch.zeros(2)
        with torch.no_grad():
            for (x,) in val_loader:
                recon_logits, mu, logvar = model(x)
                val_stats += torch.tensor([vae_loss(recon_logits, x, mu, logvar).item(), len(x)])

        dist.all_reduce(train_stats, op=dist.ReduceOp.SUM)
        dist.all_reduce(val_stats, op=dist.ReduceOp.SUM)
        train_loss = (train_stats[0] / train_stats[1]).item()
        val_loss = (val_stats[0] / val_stats[1]).item()
        scheduler.step(val_loss)

        if rank == 0:
            torch.save({"epoch": epoch, "model": model.module.state_dict(),
                        "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()}, args.ckpt)
            print(f"epoch {epoch}: train loss {train_loss:.3f}  val loss {val_loss:.3f}  "
                  f"lr {optimizer.param_groups[0]['lr']:.1e}")
        dist.barrier()

    if rank == 0:
        os.remove(args.ckpt)
        print(f"FINAL train_loss={train_loss:.6f} val_loss={val_loss:.6f} lr={optimizer.param_groups[0]['lr']:.6g}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
