"""DDP training (2 ranks, gloo, CPU) of a GRU sequence classifier, each rank on its own shard of the data;
the script keeps `raw_model` (the module inside the DDP wrapper) for checkpoints and logging.

--bug: the training step calls `raw_model(sequences)` instead of `model(sequences)`. DDP's forward is
skipped, so its reducer never averages the gradients: each rank applies its own shard's gradient and the
replicas drift apart step by step, while each rank's loss still falls.
"""
import argparse

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class GRUClassifier(nn.Module):
    def __init__(self, features=6, hidden=24, classes=2):
        super().__init__()
        self.gru = nn.GRU(features, hidden, batch_first=True)
        self.out = nn.Linear(hidden, classes)

    def forward(self, x):
        _, h = self.gru(x)
        return self.out(h[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bug", action="store_true")
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    x = torch.randn(192, 10, 6, generator=gen)
    y = (x[:, :, 0].mean(dim=1) > 0).long()
    sampler = DistributedSampler(TensorDataset(x, y), shuffle=True, seed=args.seed)
    loader = DataLoader(TensorDataset(x, y), batch_size=16, sampler=sampler)

    model = DDP(GRUClassifier())
    raw_model = model.module  # for checkpoints and logging
    optimizer = torch.optim.RMSprop(model.parameters(), lr=3e-3)

    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        model.train()
        for sequences, labels in loader:
            logits = raw_model(sequences) if args.bug else model(sequences)
            loss = F.cross_entropy(logits, labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if rank == 0:
            print(f"epoch {epoch}: loss {loss.item():.4f}")
            torch.save(raw_model.state_dict(), "gru_checkpoint.pt")

    flat = torch.cat([p.detach().reshape(-1) for p in raw_model.parameters()])
    gathered = [torch.zeros_like(flat) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, flat)
    if rank == 0:
        print(f"SYMPTOM rank_weight_diff={(gathered[0] - gathered[1]).abs().max().item():.6f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
