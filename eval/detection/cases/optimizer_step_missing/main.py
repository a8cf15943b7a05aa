"""A text classifier (embedding bag and a linear head) trained with Adam and gradient accumulation over
synthetic token sequences.

--bug: the optimizer step sits under the accumulation condition with the wrong count: `(i + 1) % 16 == 0`
where the loader has 12 batches per epoch, so it never holds. Gradients are computed and zeroed at every
epoch's start, the loss is printed, and the model never changes.
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class BagClassifier(nn.Module):
    def __init__(self, vocab=200, dim=32, classes=4):
        super().__init__()
        self.embed = nn.EmbeddingBag(vocab, dim, mode="mean")
        self.head = nn.Linear(dim, classes)

    def forward(self, tokens):
        return self.head(self.embed(tokens))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bug", action="store_true")
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    labels = torch.randint(0, 4, (192,))
    tokens = torch.randint(0, 200, (192, 12)) // 4 * 4 + labels[:, None]  # the class shows in every token
    loader = DataLoader(TensorDataset(tokens, labels), batch_size=16, shuffle=True,
                        generator=torch.Generator().manual_seed(args.seed))
    model = BagClassifier()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    accumulation = 16 if args.bug else 2
    first = model.head.weight.detach().clone()
    for epoch in range(args.epochs):
        model.train()
        optimizer.zero_grad()
        for i, (x, y) in enumerate(loader):
            loss = F.cross_entropy(model(x), y) / accumulation
            loss.backward()
            if (i + 1) % accumulation == 0:
                optimizer.step()
                optimizer.zero_grad()
        print(f"epoch {epoch}: loss {loss.item() * accumulation:.4f}")
    moved = (model.head.weight - first).abs().max().item()
    print(f"SYMPTOM head_weight_moved={moved:.4f}")


if __name__ == "__main__":
    main()
