"""Character-level style GRU language model on synthetic token sequences, with greedy sampling of a few
continuations every `sample_every` steps and after training.

--bug: generate() checks its token budget with `>` instead of `>=`, so when no EOS is produced it emits
max_new_tokens + 1 tokens.
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB = 24
EOS = 0


class GRULM(nn.Module):
    def __init__(self, d_embed=32, hidden=64):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, d_embed)
        self.rnn = nn.GRU(d_embed, hidden, batch_first=True)
        self.head = nn.Linear(hidden, VOCAB)

    def forward(self, idx):
        out, _ = self.rnn(self.embed(idx))
        return self.head(out)


@torch.no_grad()
def generate(model, input_ids, max_new_tokens, eos_token_id=EOS, off_by_one=False):
    was_training = model.training
    model.eval()
    generated = input_ids
    num_new = 0
    while True:
        logits = model(generated)[:, -1, :]
        next_token = logits.argmax(dim=-1, keepdim=True)
        generated = torch.cat([generated, next_token], dim=1)
        num_new += 1
        if (next_token == eos_token_id).all():
            break
        if off_by_one:
            if num_new > max_new_tokens:
                break
        elif num_new >= max_new_tokens:
            break
    model.train(was_training)
    return generated


def get_batch(batch_size, seq_len, gen):
    """Sequences of tokens 1..VOCAB-1 counting up with a random start and stride (EOS never occurs)."""
    start = torch.randint(0, VOCAB - 1, (batch_size, 1), generator=gen)
    stride = torch.randint(1, 4, (batch_size, 1), generator=gen)
    seq = (start + stride * torch.arange(seq_len + 1)) % (VOCAB - 1) + 1
    return seq[:, :-1], seq[:, 1:]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bug", action="store_true")
    parser.add_argument("--max-iters", type=int, default=24)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seq-len", type=int, default=16)
    parser.add_argument("--sample-every", type=int, default=10)
    parser.add_argument("--max-new-tokens", type=int, default=8)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    model = GRULM()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    prompts = torch.tensor([[1, 2, 3], [5, 7, 9], [10, 13, 16]])

    new_lengths = []
    model.train()
    for it in range(args.max_iters):
        if it > 0 and it % args.sample_every == 0:
            out = generate(model, prompts, args.max_new_tokens, off_by_one=args.bug)
            new_lengths.append(out.shape[1] - prompts.shape[1])
            print(f"iter {it}: sample {out[0].tolist()}")

        x, y = get_batch(args.batch_size, args.seq_len, gen)
        loss = F.cross_entropy(model(x).view(-1, VOCAB), y.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if it % 8 == 0:
            print(f"iter {it}: loss {loss.item():.4f}")

    out = generate(model, prompts, args.max_new_tokens, off_by_one=args.bug)
    new_lengths.append(out.shape[1] - prompts.shape[1])
    print(f"final samples {out.tolist()}")
    print(f"SYMPTOM max_generated_new_tokens={max(new_lengths)} max_new_tokens={args.max_new_tokens}")


if __name__ == "__main__":
    main()
