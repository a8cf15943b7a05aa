"""Data-parallel code run on a single process, as while debugging it on one machine: the process group is
joined through a rendezvous file (`init_method="file://..."`, world size 1) instead of torchrun's
environment, and the model is still wrapped in DDP; the script validates and prints after each epoch."""
import argparse
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

WORLD_SIZE = 1


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc = nn.Linear(16 * 4 * 4, 4)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(x.flatten(1))


def make_data(seed, n):
    gen = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 4, (n,), generator=gen)
    images = torch.randn(n, 1, 16, 16, generator=gen) * 0.3
    for c in range(4):  # each class brightens its own quadrant
        r, q = divmod(c, 2)
        images[labels == c, :, 8 * r:8 * r + 8, 8 * q:8 * q + 8] += 1.0
    return TensorDataset(images, labels)


def worker(rank, address, seed, epochs):
    dist.init_process_group("gloo", init_method=address, rank=rank, world_size=WORLD_SIZE)
    torch.manual_seed(seed)
    train_set = make_data(seed, 256)
    sampler = DistributedSampler(train_set, num_replicas=WORLD_SIZE, rank=rank, shuffle=True, seed=seed)
    loader = DataLoader(train_set, batch_size=32, sampler=sampler)
    model = DDP(Net())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    val_images, val_labels = make_data(seed + 1, 64).tensors
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        model.train()
        for images, labels in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(images), labels)
            loss.backward()
            optimizer.step()
        if rank == 0:
            model.eval()
            with torch.no_grad():
                accuracy = (model.module(val_images).argmax(1) == val_labels).float().mean().item()
            print(f"epoch {epoch}: loss {loss.item():.4f} val_acc {accuracy:.3f}")
    if rank == 0:
        print(f"FINAL loss={loss.item():.6f} val_acc={accuracy:.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()
    rendezvous = os.path.join(tempfile.mkdtemp(), "rendezvous")
    worker(0, f"file://{rendezvous}", args.seed, args.epochs)
