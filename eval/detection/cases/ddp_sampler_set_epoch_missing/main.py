"""DDP training (2 ranks, gloo, CPU) of a bag-of-embeddings text classifier over several epochs, each rank
reading its shard of the data through a shuffling DistributedSampler.

--bug: `sampler.set_epoch(epoch)` is never called. A DistributedSampler's order is a function of its seed and
epoch only, so every epoch visits the batches in the same order on every rank: the model still trains and
the loss still falls, but the data is never reshuffled.
"""
import argparse

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

VOCAB, CLASSES, LENGTH = 200, 4, 12


class BagClassifier(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.embed = nn.EmbeddingBag(VOCAB, dim, mode="mean")
        self.fc = nn.Linear(dim, CLASSES)

    def forward(self, tokens):
        return self.fc(self.embed(tokens))


def make_data(seed, n=256):
    gen = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, CLASSES, (n,), generator=gen)
    # each class draws most of its tokens from its own slice of the vocabulary
    base = labels[:, None] * (VOCAB // CLASSES)
    tokens = base + torch.randint(0, VOCAB // CLASSES, (n, LENGTH), generator=gen)
    noise = torch.rand(n, LENGTH, generator=gen) < 0.3
    tokens[noise] = torch.randint(0, VOCAB, (int(noise.sum()),), generator=gen)
    return TensorDataset(tokens, labels)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bug", action="store_true")
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(args.seed)
    train_set = make_data(args.seed)
    sampler = DistributedSampler(train_set, shuffle=True, seed=args.seed)
    loader = DataLoader(train_set, batch_size=16, sampler=sampler)

    model = DDP(BagClassifier())
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)

    first_batches = []
    for epoch in range(args.epochs):
        if not args.bug:
            sampler.set_epoch(epoch)
        model.train()
        for i, (tokens, labels) in enumerate(loader):
            if i == 0:
                first_batches.append(tokens[0].clone())
            loss = F.cross_entropy(model(tokens), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if rank == 0:
            print(f"epoch {epoch}: loss {loss.item():.4f}")

    repeated = sum(int(torch.equal(first_batches[0], b)) for b in first_batches[1:])
    if rank == 0:
        print(f"SYMPTOM epochs_repeating_first_order={repeated}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
