"""Tiny causal transformer LM with rotary position embeddings (Llama style), trained under CPU autocast
(bfloat16) on synthetic token sequences.

--bug: the rotary embedding computes its frequency matrix (inv_freq @ position_ids) inside the autocast
region, so the matmul runs and returns bfloat16 instead of float32; positions lose precision and cos/sin
are off by up to ~0.1 rad. (The fix, as in Hugging Face's Llama, disables autocast around that matmul.)
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB = 32


class RotaryEmbedding(nn.Module):
    def __init__(self, dim, base=10000.0, fp32_freqs=True):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.fp32_freqs = fp32_freqs

    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        if self.fp32_freqs:
            with torch.autocast(device_type=x.device.type, enabled=False):  # force float32
                freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
        else:
            freqs = (inv_freq_expanded @ position_ids_expanded).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary(q, k, cos, sin):
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


class Block(nn.Module):
    def __init__(self, d_model, n_heads, rotary):
        super().__init__()
        self.n_heads = n_heads
        self.norm1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.proj = nn.Linear(d_model, d_model, bias=False)
        self.norm2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))
        self.rotary = rotary

    def forward(self, x, position_ids):
        b, t, c = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.n_heads, c // self.n_heads).transpose(1, 2) for z in (q, k, v))
        cos, sin = self.rotary(q, position_ids)
        q, k = apply_rotary(q, k, cos, sin)
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(att.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp(self.norm2(x))


class TinyLM(nn.Module):
    def __init__(self, d_model=48, n_heads=4, n_layers=2, fp32_rope=True):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, d_model)
        self.rotary = RotaryEmbedding(d_model // n_heads, fp32_freqs=fp32_rope)
        self.blocks = nn.ModuleList(Block(d_model, n_heads, self.rotary) for _ in range(n_layers))
        self.norm = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, VOCAB, bias=False)

    def forward(self, idx):
        position_ids = torch.arange(idx.shape[1]).unsqueeze(0).expand(idx.shape[0], -1)
        x = self.embed(idx)
        for block in self.blocks:
            x = block(x, position_ids)
        return self.lm_head(self.norm(x))


def get_batch(batch_size, seq_len, gen):
    """Arithmetic progressions modulo VOCAB with a random start and stride."""
    start = torch.randint(0, VOCAB, (batch_size, 1), generator=gen)
    stride = torch.randint(1, 6, (batch_size, 1), generator=gen)
    seq = (start + stride * torch.arange(seq_len + 1)) % VOCAB
    return seq[:, :-1], seq[:, 1:]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bug", action="store_true")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--seq-len", type=int, default=48)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    model = TinyLM(fp32_rope=not args.bug)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)

    model.train()
    for step in range(1, args.steps + 1):
        x, y = get_batch(args.batch_size, args.seq_len, gen)
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            logits = model(x)
        loss = F.cross_entropy(logits.float().view(-1, VOCAB), y.reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if step == 1 or step % 5 == 0:
            print(f"step {step}: loss {loss.item():.4f}")

    # check the rotary tables the model used against a float64 reference
    with torch.no_grad(), torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        pos = torch.arange(args.seq_len).unsqueeze(0)
        probe = torch.zeros(1, 1, args.seq_len, 12, dtype=torch.bfloat16)
        cos, _ = model.rotary(probe, pos)
    inv_freq = 1.0 / (10000.0 ** (torch.arange(0, 12, 2, dtype=torch.float64) / 12))
    ref = torch.cat([pos[0, :, None].double() * inv_freq] * 2, dim=-1).cos()
    err = (cos[0].double() - ref).abs().max().item()
    print(f"SYMPTOM rope_cos_max_err={err:.4f}")


if __name__ == "__main__":
    main()
