"""A small decoder-only language model written by hand (token and learned position embeddings, pre-norm
nn.TransformerEncoderLayer blocks run with a causal mask, an LM head tied to the token embedding, GPT-style
N(0, 0.02) initialisation) trained with DistributedDataParallel on 2 CPU ranks (gloo) on synthetic token
sequences (arithmetic progressions modulo the vocabulary): a DistributedSampler, AdamW without weight decay
on biases and norms, a LambdaLR linear warmup stepped per batch, clip_grad_norm_ between backward and step,
and a held-out loss at the end averaged over ranks; rank 0 logs."""
import argparse
import math

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class TinyGPT(nn.Module):
    def __init__(self, vocab_size, max_len, d_model=32, n_heads=4, n_layers=2, dropout=0.1):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab_size, d_model)
        self.pos_emb = nn.Embedding(max_len, d_model)
        self.drop = nn.Dropout(dropout)
        layer = nn.TransformerEncoderLayer(d_model, n_heads, dim_feedforward=4 * d_model, dropout=dropout,
                                           activation="gelu", batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, n_layers, enable_nested_tensor=False)
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.lm_head.weight = self.tok_emb.weight  # weight tying
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)

    def forward(self, idx):
        seq_len = idx.size(1)
        pos = torch.arange(seq_len, device=idx.device)
        x = self.drop(self.tok_emb(idx) + self.pos_emb(pos))
        mask = nn.Transformer.generate_square_subsequent_mask(seq_len, device=idx.device)
        x = self.blocks(x, mask=mask, is_causal=True)
        return self.lm_head(self.ln_f(x))


def make_sequences(n, seq_len, vocab_size, generator):
    start = torch.randint(0, vocab_size, (n, 1), generator=generator)
    stride = torch.randint(1, 4, (n, 1), generator=generator)
    return (start + stride * torch.arange(seq_len + 1)) % vocab_size


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--warmup-steps", type=int, default=8)
    parser.add_argument("--max-grad-norm", type=float, default=1.0)
    parser.add_argument("--vocab-size", type=int, default=24)
    parser.add_argument("--seq-len", type=int, default=12)
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(args.seed)

    gen = torch.Generator().manual_seed(args.seed)
    train_set = TensorDataset(make_sequences(256, args.seq_len, args.vocab_size, gen))
    val_set = TensorDataset(make_sequences(64, args.seq_len, args.vocab_size, gen))
    sampler = DistributedSampler(train_set, num_replicas=world, rank=rank, shuffle=True, seed=args.seed)
    loader = DataLoader(train_set, batch_size=args.batch_size, sampler=sampler, drop_last=True)
    val_loader = DataLoader(val_set, batch_size=32,
                            sampler=DistributedSampler(val_set, num_replicas=world, rank=rank, shuffle=False))

    model = DDP(TinyGPT(args.vocab_size, args.seq_len))
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                                   {"params": no_decay, "weight_decay": 0.0}], lr=args.lr, betas=(0.9, 0.95))
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min(1.0, (step + 1) / args.warmup_steps))

    step = 0
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        model.train()
        for (seqs,) in loader:
            inputs, targets = seqs[:, :-1], seqs[:, 1:]
            logits = model(inputs)
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
            optimizer.step()
            scheduler.step()
            step += 1
            if rank == 0 and step % 4 == 0:
                print(f"step {step} lr {scheduler.get_last_lr()[0]:.5f} loss {loss.item():.4f} "
                      f"grad_norm {grad_norm.item():.3f}")

    model.eval()
    val_stats = torch.zeros(2)
    with torch.no_grad():
        for (seqs,) in val_loader:
            logits = model(seqs[:, :-1])
            val_stats += torch.tensor([F.cross_entropy(logits.reshape(-1, logits.size(-1)),
                                                       seqs[:, 1:].reshape(-1), reduction="sum").item(),
                                       seqs[:, 1:].numel()])
    train_loss = torch.tensor([loss.item()])
    dist.all_reduce(train_loss)
    dist.all_reduce(val_stats)
    if rank == 0:
        val_loss = (val_stats[0] / val_stats[1]).item()
        print(f"FINAL loss={train_loss.item() / world:.6f} val_loss={val_loss:.6f} "
              f"val_ppl={math.exp(val_loss):.3f}")
    dist.barrier()  # every rank is done before the group is torn down
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
