"""A tiny GPT-2 (built from its config, no download, attention dropout 0.2) trained on synthetic sequences,
evaluated every few steps in eval mode under no_grad. Its attention goes through an attention function
registered with transformers' AttentionInterface (as custom kernels, flash-attention wrappers and
sdpa variants are), which hands the work to transformers' sdpa implementation.

--bug: the registered function passes the module's configured dropout instead of the `dropout` it is
called with (the attention-dropout-left-on-in-eval reports: an attention class handing its dropout
probability to the kernel whatever `self.training` says), so evaluation runs with attention dropout on:
eval losses are noisy and higher, training is unaffected.
"""
import argparse

import torch
from transformers import AttentionInterface, GPT2Config, GPT2LMHeadModel
from transformers.integrations.sdpa_attention import sdpa_attention_forward

VOCAB = 32


def make_attention(bug):
    def attention(module, query, key, value, attention_mask, dropout=0.0, **kwargs):
        if bug:
            dropout = module.config.attn_pdrop
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, **kwargs)

    return attention


def get_batch(batch_size, seq_len, gen):
    start = torch.randint(1, VOCAB, (batch_size, 1), generator=gen)
    stride = torch.randint(1, 3, (batch_size, 1), generator=gen)
    return (start + stride * torch.arange(seq_len)) % VOCAB


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bug", action="store_true")
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--eval-every", type=int, default=5)
    args = parser.parse_args()

    AttentionInterface.register("project_sdpa", make_attention(args.bug))
    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    config = GPT2Config(vocab_size=VOCAB, n_positions=64, n_embd=32, n_layer=2, n_head=2, attn_pdrop=0.2,
                        bos_token_id=0, eos_token_id=0, pad_token_id=0)
    config._attn_implementation = "project_sdpa"
    model = GPT2LMHeadModel(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    val_x = get_batch(16, 12, torch.Generator().manual_seed(1000 + args.seed))

    eval_losses = []
    model.train()
    for step in range(args.steps):
        x = get_batch(16, 12, gen)
        loss = model(input_ids=x, labels=x).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if (step + 1) % args.eval_every == 0:
            model.eval()
            with torch.no_grad():
                first = model(input_ids=val_x, labels=val_x).loss.item()
                second = model(input_ids=val_x, labels=val_x).loss.item()
            eval_losses.append((first, second))
            print(f"step {step}: train loss {loss.item():.4f} eval loss {first:.4f}")
            model.train()
    spread = max(abs(a - b) for a, b in eval_losses)
    print(f"SYMPTOM eval_loss_repeat_spread={spread:.6f}")  # 0 when eval is deterministic


if __name__ == "__main__":
    main()
