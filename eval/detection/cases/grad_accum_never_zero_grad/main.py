"""Bag-of-words text classifier (EmbeddingBag) on synthetic token "documents", trained with gradient
accumulation: micro-batches of 8 documents, an optimizer step every 4 micro-batches.

--bug: optimizer.zero_grad() is never called, so gradients keep accumulating across optimizer steps:
every update also re-applies all earlier gradients.
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

VOCAB, N_CLASSES, DOC_LEN = 200, 4, 24


class SyntheticDocs(Dataset):
    """Each class prefers its own slice of the vocabulary; documents mix class words and common words."""

    def __init__(self, n, gen):
        self.labels = torch.randint(0, N_CLASSES, (n,), generator=gen)
        common = torch.randint(0, VOCAB, (n, DOC_LEN), generator=gen)
        topical = self.labels[:, None] * (VOCAB // N_CLASSES) + torch.randint(0, VOCAB // N_CLASSES, (n, DOC_LEN), generator=gen)
        use_topical = torch.rand(n, DOC_LEN, generator=gen) < 0.3
        self.docs = torch.where(use_topical, topical, common)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.docs[i], self.labels[i]


class BowClassifier(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.embed = nn.EmbeddingBag(VOCAB, dim, mode="mean")
        self.fc = nn.Linear(dim, N_CLASSES)

    def forward(self, docs):
        return self.fc(self.embed(docs))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bug", action="store_true")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--micro-batch", type=int, default=8)
    parser.add_argument("--accumulation-steps", type=int, default=4)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    dataset = SyntheticDocs(96, gen)
    train_loader = DataLoader(dataset, batch_size=args.micro_batch, shuffle=True, generator=gen)

    model = BowClassifier()
    optimizer = torch.optim.SGD(model.parameters(), lr=2.0)
    accum = args.accumulation_steps
    total_updates = args.epochs * len(train_loader) // accum

    updates = 0
    last_check = None
    for epoch in range(args.epochs):
        model.train()
        micro = []
        running = 0.0
        for step, (docs, labels) in enumerate(train_loader):
            loss = F.cross_entropy(model(docs), labels) / accum
            loss.backward()
            running += loss.item()
            micro.append((docs, labels))
            if (step + 1) % accum == 0:
                if updates == total_updates - 1:
                    # check the last update: accumulated grad should be the grad of the effective batch
                    d, l = torch.cat([m[0] for m in micro]), torch.cat([m[1] for m in micro])
                    ref = torch.autograd.grad(F.cross_entropy(model(d), l), list(model.parameters()))
                    last_check = max((p.grad - r).abs().max().item() for p, r in zip(model.parameters(), ref))
                optimizer.step()
                if not args.bug:
                    optimizer.zero_grad()
                updates += 1
                micro = []
        print(f"epoch {epoch}: mean loss {running * accum / len(train_loader):.4f}")

    with torch.no_grad():
        acc = (model(dataset.docs).argmax(dim=1) == dataset.labels).float().mean().item()
    print(f"train accuracy {acc:.3f}")
    print(f"SYMPTOM accumulated_grad_max_err={last_check:.6f}")


if __name__ == "__main__":
    main()
