"""A language-model head whose logits are large: the shape of workload that fragments glibc's heap.

Each step trains on one batch (forward, cross-entropy, backward, SGD) and then evaluates one batch under
no_grad, as the word_language_model example does in its validation loop. The logits of one batch are
`--logits-mb` MB (rows x vocab float32). After every step the process's resident size (VmRSS) is appended
to `--rss-file`, so the benchmark can fit the growth per step. Synthetic data; no downloads.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

ROWS = 350  # tokens per batch (bptt 35 x batch 10, as the seed Transformer's evaluation)
HIDDEN = 32  # small: the cost per step is the logits' memory traffic, not the matmul


def resident_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


class Head(nn.Module):
    def __init__(self, vocab: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, HIDDEN)
        self.mix = nn.Linear(HIDDEN, HIDDEN)
        self.decoder = nn.Linear(HIDDEN, vocab)

    def forward(self, tokens):
        h = torch.tanh(self.mix(self.embed(tokens)))
        return F.log_softmax(self.decoder(h), dim=-1)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--logits-mb", type=float, default=25.0)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--device", default="cpu")
    p.add_argument("--rss-file", default="rss_per_step.txt")
    args = p.parse_args()
    vocab = max(16, int(args.logits_mb * 1e6 / (ROWS * 4)))
    torch.manual_seed(0)
    device = torch.device(args.device)
    model = Head(vocab).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    tokens = torch.randint(0, vocab, (ROWS + 1,), device=device)
    with open(args.rss_file, "w") as rss:
        for step in range(args.steps):
            model.train()
            opt.zero_grad()
            loss = F.nll_loss(model(tokens[:-1]), tokens[1:])
            loss.backward()
            opt.step()
            model.eval()
            with torch.no_grad():
                out = model(tokens[:-1])
                out = out.view(-1, vocab)
                val = F.nll_loss(out, tokens[1:]).item()
            if device.type == "cuda":
                torch.cuda.synchronize()
            rss.write(f"{resident_mb():.1f}\n")
            rss.flush()
    print(f"vocab {vocab} logits {ROWS * vocab * 4 / 1e6:.1f} MB final loss {loss.item():.4f} val {val:.4f}")


if __name__ == "__main__":
    main()
