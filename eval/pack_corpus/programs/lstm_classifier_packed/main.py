"""Sequence classification with an embedding, a bidirectional LSTM over variable-length sequences
(pack_padded_sequence) and a linear head on the last hidden states; Adam, gradient-norm clipping."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_sequence


class LSTMClassifier(nn.Module):
    def __init__(self, vocab=30, emb=16, hidden=24, classes=2):
        super().__init__()
        self.embedding = nn.Embedding(vocab, emb, padding_idx=0)
        self.lstm = nn.LSTM(emb, hidden, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(2 * hidden, classes)

    def forward(self, tokens, lengths):
        packed = pack_padded_sequence(self.embedding(tokens), lengths, batch_first=True, enforce_sorted=False)
        _, (h, _) = self.lstm(packed)
        return self.fc(torch.cat([h[-2], h[-1]], dim=1))


def make_dataset(n, gen):
    seqs, labels = [], []
    for _ in range(n):
        length = int(torch.randint(4, 14, (1,), generator=gen))
        seq = torch.randint(1, 30, (length,), generator=gen)
        seqs.append(seq)
        labels.append(int((seq < 10).sum() > (seq >= 20).sum()))  # more small tokens than large ones
    return seqs, torch.tensor(labels)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    seqs, labels = make_dataset(160, gen)
    model = LSTMClassifier()
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)

    for epoch in range(args.epochs):
        order = torch.randperm(len(seqs), generator=gen)
        for start in range(0, len(seqs), 16):
            idx = order[start:start + 16]
            batch = [seqs[i] for i in idx]
            lengths = torch.tensor([len(s) for s in batch])
            tokens = pad_sequence(batch, batch_first=True)
            loss = F.cross_entropy(model(tokens, lengths), labels[idx])
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), max_norm=5.0)
            optimizer.step()
        print(f"epoch {epoch}: loss {loss.item():.4f}")
    print(f"FINAL loss={loss.item():.6f}")


if __name__ == "__main__":
    main()
