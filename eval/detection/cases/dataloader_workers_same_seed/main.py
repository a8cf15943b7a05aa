"""Signal classifier trained with a DataLoader (2 worker processes) whose Dataset draws a random
augmentation (DC offset + jitter) with numpy in __getitem__.

The worker_init_fn seeds numpy in each worker. Correct: from the per-worker torch seed
(torch.initial_seed(), which differs per worker and follows the loader's generator).
--bug: every worker is seeded with the same args.seed "for reproducibility", so both workers draw the same
augmentation sequence and the augmentations repeat batch after batch.
"""
import argparse
import functools

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class NoisySignals(Dataset):
    def __init__(self, n, length, seed):
        rng = np.random.default_rng(seed)
        self.labels = rng.integers(0, 3, n)
        t = np.linspace(0, 1, length, dtype=np.float32)
        shapes = np.stack([np.sin(2 * np.pi * 3 * t), np.sign(np.sin(2 * np.pi * 3 * t)), 2 * (3 * t % 1) - 1])
        self.clean = (shapes[self.labels] * rng.uniform(0.5, 1.5, (n, 1))).astype(np.float32)

    def __len__(self):
        return len(self.clean)

    def __getitem__(self, i):
        x = self.clean[i] + np.random.uniform(-0.5, 0.5) + np.random.normal(0, 0.2, self.clean.shape[1])
        return torch.from_numpy(x.astype(np.float32)), int(self.labels[i]), i


def seed_worker(worker_id, base_seed=None):
    if base_seed is not None:
        np.random.seed(base_seed)
    else:
        np.random.seed(torch.initial_seed() % 2 ** 32)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bug", action="store_true")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=8)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    dataset = NoisySignals(64, 32, args.seed)
    init_fn = functools.partial(seed_worker, base_seed=args.seed) if args.bug else seed_worker
    train_loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True, num_workers=2,
                              worker_init_fn=init_fn, persistent_workers=True,
                              generator=torch.Generator().manual_seed(args.seed))

    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 3))
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)

    seen = {}
    duplicates = 0
    step = 0
    for epoch in range(args.epochs):
        total = 0.0
        for x, y, idx in train_loader:
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item()
            step += 1
            # bookkeeping: which augmentation draws did this batch get?
            aug = x.numpy() - dataset.clean[idx.numpy()]
            for row in aug:
                key = np.round(row, 5).tobytes()
                duplicates += key in seen
                seen[key] = step
        print(f"epoch {epoch}: mean loss {total / len(train_loader):.4f}")

    print(f"SYMPTOM repeated_augmentations={duplicates} of {step * args.batch_size}")


if __name__ == "__main__":
    main()
