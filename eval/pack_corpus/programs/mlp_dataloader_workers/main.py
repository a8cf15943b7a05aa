"""A map-style Dataset that augments each sample with its own random noise, read by a DataLoader with two
worker processes; each worker is seeded from the loader's generator (worker_init_fn, torch.initial_seed)
so runs are reproducible and workers draw different noise. Adam."""
import argparse
import random

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class NoisyPoints(Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n, 8, generator=g)
        self.y = (self.x[:, 0] > self.x[:, 1]).long()

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        jitter = 0.05 * torch.randn(8) * random.random()
        return self.x[i] + jitter, self.y[i]


def seed_worker(worker_id):
    worker_seed = torch.initial_seed() % 2 ** 32
    random.seed(worker_seed)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    random.seed(args.seed)
    g = torch.Generator().manual_seed(args.seed)
    loader = DataLoader(NoisyPoints(256, args.seed), batch_size=32, shuffle=True, num_workers=args.workers,
                        worker_init_fn=seed_worker, generator=g)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2))
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)

    for epoch in range(args.epochs):
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: loss {loss.item():.4f}")
    print(f"FINAL loss={loss.item():.6f}")


if __name__ == "__main__":
    main()
