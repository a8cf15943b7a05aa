"""word2vec skip-gram with negative sampling: centre and context nn.Embedding tables with sparse=True,
trained with torch.optim.SparseAdam on (centre, context) pairs drawn from a synthetic corpus with topic
structure; negatives drawn from the unigram distribution raised to 3/4 (torch.multinomial)."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


class SkipGram(nn.Module):
    def __init__(self, vocab, dim=16):
        super().__init__()
        self.center = nn.Embedding(vocab, dim, sparse=True)
        self.context = nn.Embedding(vocab, dim, sparse=True)
        nn.init.uniform_(self.center.weight, -0.5 / dim, 0.5 / dim)
        nn.init.zeros_(self.context.weight)

    def forward(self, center, context, negatives):
        c = self.center(center)                                   # (b, d)
        pos = (c * self.context(context)).sum(1)
        neg = torch.bmm(self.context(negatives), c.unsqueeze(2)).squeeze(2)
        return -(F.logsigmoid(pos) + F.logsigmoid(-neg).sum(1)).mean()


def corpus(n_tokens, vocab, gen):
    topic = torch.randint(0, 4, (n_tokens // 20,), generator=gen).repeat_interleave(20)
    return topic * (vocab // 4) + torch.randint(0, vocab // 4, (len(topic),), generator=gen)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--window", type=int, default=2)
    parser.add_argument("--negatives", type=int, default=5)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    vocab = 80
    tokens = corpus(2000, vocab, gen)
    pairs = torch.cat([torch.stack([tokens[:-k], tokens[k:]], 1) for k in range(1, args.window + 1)])
    pairs = torch.cat([pairs, pairs.flip(1)])
    unigram = torch.bincount(tokens, minlength=vocab).float().pow(0.75)

    model = SkipGram(vocab)
    optimizer = torch.optim.SparseAdam(list(model.parameters()), lr=0.01)
    order = torch.randperm(len(pairs), generator=gen)
    for step, idx in enumerate(order.split(256)):
        negatives = torch.multinomial(unigram, len(idx) * args.negatives, replacement=True, generator=gen)
        loss = model(pairs[idx, 0], pairs[idx, 1], negatives.view(len(idx), -1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 10 == 0:
            print(f"step {step}: loss {loss.item():.4f}")
    emb = F.normalize(model.center.weight.detach(), dim=1)
    same_topic = (emb[:20] @ emb[:20].t()).mean().item()
    print(f"FINAL loss={loss.item():.6f} same_topic_sim={same_topic:.4f}")


if __name__ == "__main__":
    main()
