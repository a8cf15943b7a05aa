"""A decoder-only Transformer language model written by hand (causal self-attention with
scaled_dot_product_attention, pre-norm blocks, tied embeddings), nanoGPT style: the learning rate is set
by hand in each param group from a warmup + cosine schedule, AdamW with weight decay only on matrices,
gradient clipping, periodic estimate_loss() on train and validation splits under no_grad in eval mode."""
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).contiguous().view(b, t, d))


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d, heads)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d), nn.Dropout(0.1))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab=48, block_size=16, d=32, heads=4, layers=2):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(block_size, d)
        self.blocks = nn.ModuleList([Block(d, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # weight tying
        self.apply(self._init_weights)

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        x = self.wte(idx) + self.wpe(torch.arange(idx.size(1)))
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        loss = None if targets is None else F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-iters", type=int, default=20)
    parser.add_argument("--eval-interval", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=4)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    # A sequence with structure: each token is the previous one plus a small random step (mod vocab).
    steps = torch.randint(-2, 3, (4000,))
    data = torch.cumsum(steps, 0) % 48
    train_data, val_data = data[:3600], data[3600:]

    def get_batch(split, batch_size=16, block=16):
        src = train_data if split == "train" else val_data
        ix = torch.randint(len(src) - block - 1, (batch_size,))
        return torch.stack([src[i:i + block] for i in ix]), torch.stack([src[i + 1:i + 1 + block] for i in ix])

    model = GPT()
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                                  lr=3e-3, betas=(0.9, 0.95))

    def get_lr(it, max_lr=3e-3, min_lr=3e-4):
        if it < args.warmup:
            return max_lr * (it + 1) / args.warmup
        ratio = (it - args.warmup) / max(1, args.max_iters - args.warmup)
        return min_lr + 0.5 * (1 + math.cos(math.pi * ratio)) * (max_lr - min_lr)

    @torch.no_grad()
    def estimate_loss(iters=2):
        model.eval()
        out = {}
        for split in ("train", "val"):
            out[split] = sum(model(*get_batch(split))[1].item() for _ in range(iters)) / iters
        model.train()
        return out

    model.train()
    for it in range(args.max_iters):
        if it % args.eval_interval == 0:
            losses = estimate_loss()
            print(f"iter {it}: train {losses['train']:.4f} val {losses['val']:.4f}")
        for group in optimizer.param_groups:
            group["lr"] = get_lr(it)
        xb, yb = get_batch("train")
        _, loss = model(xb, yb)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
    losses = estimate_loss()
    print(f"FINAL loss={loss.item():.6f} val_loss={losses['val']:.6f}")


if __name__ == "__main__":
    main()
