"""Encoder-decoder LSTMs that learn to reverse digit sequences: the decoder is fed the gold previous token
with probability 0.5 (teacher forcing) and its own prediction otherwise; two models' parameters in one
Adam optimizer; greedy decoding accuracy under no_grad at the end."""
import argparse
import random

import torch
import torch.nn as nn
import torch.nn.functional as F

SOS, VOCAB, LENGTH = 10, 11, 6


class Encoder(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 16)
        self.lstm = nn.LSTM(16, hidden, batch_first=True)

    def forward(self, src):
        _, state = self.lstm(self.emb(src))
        return state


class Decoder(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 16)
        self.lstm = nn.LSTM(16, hidden, batch_first=True)
        self.out = nn.Linear(hidden, VOCAB)

    def forward(self, token, state):
        y, state = self.lstm(self.emb(token).unsqueeze(1), state)
        return self.out(y.squeeze(1)), state


def decode(encoder, decoder, src, tgt=None, teacher_forcing=0.0):
    state = encoder(src)
    token = torch.full((src.size(0),), SOS, dtype=torch.long)
    logits = []
    for t in range(LENGTH):
        step_logits, state = decoder(token, state)
        logits.append(step_logits)
        use_gold = tgt is not None and random.random() < teacher_forcing
        token = tgt[:, t] if use_gold else step_logits.argmax(1)
    return torch.stack(logits, 1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    random.seed(args.seed)
    encoder, decoder = Encoder(), Decoder()
    optimizer = torch.optim.Adam(list(encoder.parameters()) + list(decoder.parameters()), lr=1e-2)

    for step in range(args.steps):
        src = torch.randint(0, 10, (32, LENGTH))
        tgt = src.flip(1)
        logits = decode(encoder, decoder, src, tgt, teacher_forcing=0.5)
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), tgt.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 10 == 0:
            print(f"step {step}: loss {loss.item():.4f}")

    encoder.eval()
    decoder.eval()
    with torch.no_grad():
        src = torch.randint(0, 10, (64, LENGTH))
        acc = (decode(encoder, decoder, src).argmax(2) == src.flip(1)).float().mean().item()
    print(f"FINAL loss={loss.item():.6f} token_acc={acc:.4f}")


if __name__ == "__main__":
    main()
