"""Text classification with nn.TransformerEncoder: token and learned position embeddings, a [CLS] token,
a key padding mask for padded sequences; AdamW with a linear warmup (LambdaLR per step); accuracy on a
validation set in eval mode after each epoch."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

PAD, CLS, VOCAB, MAX_LEN = 0, 1, 40, 16


class EncoderClassifier(nn.Module):
    def __init__(self, d_model=32, classes=3):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, d_model, padding_idx=PAD)
        self.pos = nn.Embedding(MAX_LEN + 1, d_model)
        layer = nn.TransformerEncoderLayer(d_model, nhead=4, dim_feedforward=64, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2)
        self.head = nn.Linear(d_model, classes)

    def forward(self, tokens):
        tokens = torch.cat([torch.full((tokens.size(0), 1), CLS), tokens], dim=1)
        positions = torch.arange(tokens.size(1)).unsqueeze(0)
        h = self.encoder(self.tok(tokens) + self.pos(positions), src_key_padding_mask=tokens == PAD)
        return self.head(h[:, 0])


def make_split(n, gen):
    tokens = torch.randint(2, VOCAB, (n, MAX_LEN), generator=gen)
    lengths = torch.randint(5, MAX_LEN + 1, (n,), generator=gen)
    tokens[torch.arange(MAX_LEN).unsqueeze(0) >= lengths.unsqueeze(1)] = PAD
    labels = torch.bucketize(lengths, torch.tensor([8, 12]))  # short / medium / long
    return tokens, labels


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    train_x, train_y = make_split(192, gen)
    val_x, val_y = make_split(64, gen)

    model = EncoderClassifier()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / 6))

    for epoch in range(args.epochs):
        model.train()
        for xb, yb in zip(train_x.split(32), train_y.split(32)):
            loss = F.cross_entropy(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
        model.eval()
        with torch.no_grad():
            acc = (model(val_x).argmax(1) == val_y).float().mean().item()
        print(f"epoch {epoch}: loss {loss.item():.4f} val acc {acc:.3f}")
    print(f"FINAL loss={loss.item():.6f} val_acc={acc:.4f}")


if __name__ == "__main__":
    main()
