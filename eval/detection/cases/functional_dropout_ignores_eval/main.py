"""A bag-of-embeddings text classifier written in the functional style (F.relu, F.dropout in `forward`),
trained with AdamW on synthetic token sequences, with a validation pass after every epoch under
model.eval() and torch.no_grad().

--bug: `forward` calls `F.dropout(h, self.p)` without `training=self.training`. The functional form's
`training` defaults to True, so `model.eval()` does not switch it off: every validation pass drops half
of the hidden units. The validation accuracy is that of a randomly thinned network and changes from one
pass over the same data to the next. Nothing fails.
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


class BagClassifier(nn.Module):
    def __init__(self, vocab=200, dim=32, hidden=64, classes=4, p=0.5, bug=False):
        super().__init__()
        self.embed = nn.EmbeddingBag(vocab, dim, mode="mean")
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, classes)
        self.p = p
        self.bug = bug

    def forward(self, tokens):
        h = F.relu(self.fc1(self.embed(tokens)))
        if self.bug:
            h = F.dropout(h, self.p)
        else:
            h = F.dropout(h, self.p, training=self.training)
        return self.fc2(h)


def make_batches(gen, n_batches, batch=32, length=12, vocab=200, classes=4):
    batches = []
    for _ in range(n_batches):
        labels = torch.randint(0, classes, (batch,), generator=gen)
        tokens = torch.randint(0, vocab, (batch, length), generator=gen)
        tokens[:, :4] = labels[:, None] * (vocab // classes) + torch.randint(0, 8, (batch, 4), generator=gen)
        batches.append((tokens, labels))
    return batches


@torch.no_grad()
def evaluate(model, batches):
    model.eval()
    correct = 0
    for tokens, labels in batches:
        correct += (model(tokens).argmax(1) == labels).sum().item()
    return correct / sum(len(labels) for _, labels in batches)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bug", action="store_true")
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    train_batches, val_batches = make_batches(gen, 6), make_batches(gen, 3)
    model = BagClassifier(bug=args.bug)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for epoch in range(args.epochs):
        model.train()
        for tokens, labels in train_batches:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(tokens), labels)
            loss.backward()
            optimizer.step()
        accuracy = evaluate(model, val_batches)
        print(f"epoch {epoch}: loss {loss.item():.4f} val_acc {accuracy:.3f}")

    spread = abs(evaluate(model, val_batches) - evaluate(model, val_batches))
    print(f"SYMPTOM val_acc_spread_between_two_passes={spread:.3f}")


if __name__ == "__main__":
    main()
