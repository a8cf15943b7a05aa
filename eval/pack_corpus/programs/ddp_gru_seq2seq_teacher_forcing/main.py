"""A GRU encoder-decoder that learns to reverse synthetic token sequences, trained with teacher forcing
(the decoder reads BOS and the reversed target shifted right) under DistributedDataParallel on 2 CPU ranks
(gloo): a DistributedSampler, each loader batch split into 2 micro-batches whose gradients are accumulated,
the first backward inside model.no_sync() so gradients are all-reduced once per optimizer step, zero_grad
once per step, Adam with a StepLR per epoch, and a greedy-decoding validation per epoch (eval mode,
torch.no_grad) whose token and sequence accuracy are summed over ranks; rank 0 logs."""
import argparse

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

BOS = 0


class Seq2Seq(nn.Module):
    def __init__(self, vocab_size, emb_dim=16, hidden=48):
        super().__init__()
        self.src_emb = nn.Embedding(vocab_size, emb_dim)
        self.encoder = nn.GRU(emb_dim, hidden, batch_first=True)
        self.tgt_emb = nn.Embedding(vocab_size, emb_dim)
        self.decoder = nn.GRU(emb_dim, hidden, batch_first=True)
        self.out = nn.Linear(hidden, vocab_size)

    def forward(self, src, tgt_in):
        """Teacher forcing: logits for every target position given the true previous tokens."""
        _, h = self.encoder(self.src_emb(src))
        dec_out, _ = self.decoder(self.tgt_emb(tgt_in), h)
        return self.out(dec_out)

    @torch.no_grad()
    def greedy_decode(self, src, length):
        _, h = self.encoder(self.src_emb(src))
        token = torch.full((src.size(0), 1), BOS, dtype=torch.long)
        outputs = []
        for _ in range(length):
            dec_out, h = self.decoder(self.tgt_emb(token), h)
            token = self.out(dec_out).argmax(-1)
            outputs.append(token)
        return torch.cat(outputs, dim=1)


def micro_batch_backward(model, src, tgt_in, tgt, num_micro):
    logits = model(src, tgt_in)
    loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt.reshape(-1)) / num_micro
    loss.backward()
    return loss.item()


def make_pairs(n, length, vocab_size, generator):
    src = torch.randint(1, vocab_size, (n, length), generator=generator)  # 0 is BOS
    return src, src.flip(1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64, help="per rank, split into micro-batches")
    parser.add_argument("--accum-steps", type=int, default=2)
    parser.add_argument("--lr", type=float, default=2e-2)
    parser.add_argument("--vocab-size", type=int, default=8)
    parser.add_argument("--length", type=int, default=5)
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(args.seed)

    gen = torch.Generator().manual_seed(args.seed)
    train_set = TensorDataset(*make_pairs(1024, args.length, args.vocab_size, gen))
    val_set = TensorDataset(*make_pairs(128, args.length, args.vocab_size, gen))
    train_sampler = DistributedSampler(train_set, num_replicas=world, rank=rank, shuffle=True, seed=args.seed)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, sampler=train_sampler)
    val_loader = DataLoader(val_set, batch_size=64,
                            sampler=DistributedSampler(val_set, num_replicas=world, rank=rank, shuffle=False))

    model = DDP(Seq2Seq(args.vocab_size))
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.7)

    for epoch in range(args.epochs):
        train_sampler.set_epoch(epoch)
        model.train()
        epoch_loss, updates = 0.0, 0
        for src, tgt in train_loader:
            tgt_in = torch.cat([torch.full((tgt.size(0), 1), BOS, dtype=torch.long), tgt[:, :-1]], dim=1)
            micro = list(zip(src.chunk(args.accum_steps), tgt_in.chunk(args.accum_steps),
                             tgt.chunk(args.accum_steps)))
            step_loss = 0.0
            for s, t_in, t in micro[:-1]:
                with model.no_sync():  # forward and backward inside: gradients accumulate locally
                    step_loss += micro_batch_backward(model, s, t_in, t, len(micro))
            step_loss += micro_batch_backward(model, *micro[-1], len(micro))  # all-reduced here
            optimizer.step()
            optimizer.zero_grad()
            epoch_loss += step_loss
            updates += 1
        scheduler.step()

        model.eval()
        val_stats = torch.zeros(3)
        for src, tgt in val_loader:
            pred = model.module.greedy_decode(src, args.length)
            val_stats += torch.tensor([(pred == tgt).sum().item(), (pred == tgt).all(1).sum().item(), len(tgt)])
        dist.all_reduce(val_stats)
        train_loss = epoch_loss / updates
        token_acc = (val_stats[0] / (val_stats[2] * args.length)).item()
        seq_acc = (val_stats[1] / val_stats[2]).item()
        if rank == 0:
            print(f"epoch {epoch} lr {scheduler.get_last_lr()[0]:.4f}: loss {train_loss:.4f} ({updates} updates), "
                  f"val token acc {token_acc:.4f}, val seq acc {seq_acc:.4f}")

    if rank == 0:
        print(f"FINAL loss={train_loss:.6f} token_acc={token_acc:.4f} seq_acc={seq_acc:.4f}")
    dist.barrier()  # every rank is done before the group is torn down
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
