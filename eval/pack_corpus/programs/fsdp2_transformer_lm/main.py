"""FSDP (the fully_shard API) on 2 CPU ranks (gloo): each Transformer block is sharded, then the root
model; Adam over the sharded (DTensor) parameters; a tiny next-token language model on synthetic
sequences; each rank trains on its own batches and the loss is averaged with all_reduce for printing."""
import argparse

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard


class TinyLM(nn.Module):
    def __init__(self, vocab=32, d=32, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList([
            nn.TransformerEncoderLayer(d, nhead=4, dim_feedforward=64, dropout=0.0, batch_first=True)
            for _ in range(layers)])
        self.head = nn.Linear(d, vocab)

    def forward(self, tokens):
        mask = nn.Transformer.generate_square_subsequent_mask(tokens.size(1))
        h = self.embed(tokens)
        for block in self.blocks:
            h = block(h, src_mask=mask, is_causal=True)
        return self.head(h)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--steps", type=int, default=6)
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    mesh = init_device_mesh("cpu", (world,))
    torch.manual_seed(args.seed)
    model = TinyLM()
    for block in model.blocks:
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)

    gen = torch.Generator().manual_seed(args.seed * 10 + rank)
    for step in range(args.steps):
        start = torch.randint(0, 32, (8, 1), generator=gen)
        tokens = (start + torch.arange(17)) % 32   # counting sequences
        logits = model(tokens[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, 32), tokens[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        mean = loss.detach().clone()
        dist.all_reduce(mean)
        if rank == 0:
            print(f"step {step}: loss {mean.item() / world:.4f}")
    if rank == 0:
        print(f"FINAL loss={mean.item() / world:.6f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
