"""nn.Transformer (encoder and decoder) learning to copy-and-sort short sequences: a causal target mask from
generate_square_subsequent_mask, shifted decoder inputs, label smoothing, Adam with betas (0.9, 0.98) and
the inverse-square-root warmup schedule of "Attention is all you need" (LambdaLR)."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

BOS, VOCAB, LENGTH = 1, 20, 8


class Seq2Seq(nn.Module):
    def __init__(self, d=32):
        super().__init__()
        self.d = d
        self.src_emb = nn.Embedding(VOCAB, d)
        self.tgt_emb = nn.Embedding(VOCAB, d)
        self.pos = nn.Parameter(torch.randn(LENGTH + 1, d) * 0.02)
        self.transformer = nn.Transformer(d_model=d, nhead=4, num_encoder_layers=1, num_decoder_layers=1,
                                          dim_feedforward=64, dropout=0.1, batch_first=True)
        self.generator = nn.Linear(d, VOCAB)

    def forward(self, src, tgt_in):
        mask = nn.Transformer.generate_square_subsequent_mask(tgt_in.size(1))
        s = self.src_emb(src) + self.pos[:src.size(1)]
        t = self.tgt_emb(tgt_in) + self.pos[:tgt_in.size(1)]
        return self.generator(self.transformer(s, t, tgt_mask=mask, tgt_is_causal=True))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    model = Seq2Seq()
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    warmup = 5
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: model.d ** -0.5 * min((s + 1) ** -0.5, (s + 1) * warmup ** -1.5))
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)

    model.train()
    for step in range(args.steps):
        src = torch.randint(2, VOCAB, (24, LENGTH))
        tgt = src.sort(dim=1).values
        tgt_in = torch.cat([torch.full((24, 1), BOS), tgt[:, :-1]], dim=1)
        logits = model(src, tgt_in)
        loss = criterion(logits.reshape(-1, VOCAB), tgt.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        if step % 5 == 0:
            print(f"step {step}: loss {loss.item():.4f}")
    print(f"FINAL loss={loss.item():.6f}")


if __name__ == "__main__":
    main()
