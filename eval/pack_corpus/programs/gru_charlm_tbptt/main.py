"""Character-level language model: a 2-layer GRU over one long synthetic text, truncated backpropagation
through time (the hidden state is carried across chunks and detached), SGD with an ExponentialLR per
epoch, gradient clipping; perplexity on a held-out tail in eval mode at the end."""
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class CharGRU(nn.Module):
    def __init__(self, vocab, emb=16, hidden=48):
        super().__init__()
        self.emb = nn.Embedding(vocab, emb)
        self.rnn = nn.GRU(emb, hidden, num_layers=2, dropout=0.1)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, x, h=None):
        y, h = self.rnn(self.emb(x), h)
        return self.out(y), h


def synthetic_text(n, gen):
    words = ["the", "cat", "sat", "on", "a", "mat", "and", "dog", "ran", "far"]
    picks = torch.randint(0, len(words), (n,), generator=gen).tolist()
    return " ".join(words[i] for i in picks)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--bptt", type=int, default=25)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    text = synthetic_text(300, torch.Generator().manual_seed(args.seed))
    chars = sorted(set(text))
    data = torch.tensor([chars.index(c) for c in text])
    n_batch = 4
    usable = (len(data) - 200) // n_batch * n_batch
    train = data[:usable].view(n_batch, -1).t().contiguous()   # (time, batch)
    held_out = data[-200:].unsqueeze(1)

    model = CharGRU(len(chars))
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.5)

    for epoch in range(args.epochs):
        model.train()
        hidden = None
        for i in range(0, train.size(0) - 1, args.bptt):
            seq_len = min(args.bptt, train.size(0) - 1 - i)
            inputs, targets = train[i:i + seq_len], train[i + 1:i + 1 + seq_len]
            if hidden is not None:
                hidden = hidden.detach()
            logits, hidden = model(inputs, hidden)
            loss = F.cross_entropy(logits.view(-1, len(chars)), targets.reshape(-1))
            model.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 0.25)
            optimizer.step()
        scheduler.step()
        print(f"epoch {epoch}: loss {loss.item():.4f}")

    model.eval()
    with torch.no_grad():
        logits, _ = model(held_out[:-1])
        val = F.cross_entropy(logits.view(-1, len(chars)), held_out[1:].reshape(-1)).item()
    print(f"FINAL loss={loss.item():.6f} val_ppl={math.exp(val):.3f}")


if __name__ == "__main__":
    main()
