"""Text classification in the style of the PyTorch text tutorial: an nn.EmbeddingBag (mean mode) over
variable-length token lists flattened with offsets by a collate_fn, a linear layer; SGD with lr 5 and a
StepLR that decays when the validation accuracy stops improving; gradient clipping."""
import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader


class TextClassificationModel(nn.Module):
    def __init__(self, vocab_size, embed_dim, num_class):
        super().__init__()
        self.embedding = nn.EmbeddingBag(vocab_size, embed_dim, mode="mean")
        self.fc = nn.Linear(embed_dim, num_class)
        self.init_weights()

    def init_weights(self):
        initrange = 0.5
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.fc.weight.data.uniform_(-initrange, initrange)
        self.fc.bias.data.zero_()

    def forward(self, text, offsets):
        return self.fc(self.embedding(text, offsets))


def synthetic_docs(n, vocab, gen):
    docs = []
    for _ in range(n):
        label = int(torch.randint(0, 4, (1,), generator=gen))
        length = int(torch.randint(5, 20, (1,), generator=gen))
        topical = torch.randint(label * 25, (label + 1) * 25, (length // 2,), generator=gen)
        filler = torch.randint(0, vocab, (length - length // 2,), generator=gen)
        docs.append((label, torch.cat([topical, filler])))
    return docs


def collate_batch(batch):
    labels = torch.tensor([label for label, _ in batch])
    texts = [text for _, text in batch]
    offsets = torch.tensor([0] + [len(t) for t in texts[:-1]]).cumsum(dim=0)
    return labels, torch.cat(texts), offsets


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    vocab = 100
    train_loader = DataLoader(synthetic_docs(256, vocab, gen), batch_size=32, shuffle=True, collate_fn=collate_batch,
                              generator=gen)
    valid_loader = DataLoader(synthetic_docs(64, vocab, gen), batch_size=32, collate_fn=collate_batch)

    model = TextClassificationModel(vocab, 16, 4)
    criterion = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=5)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.1)
    total_accu = None
    for epoch in range(args.epochs):
        model.train()
        for label, text, offsets in train_loader:
            optimizer.zero_grad()
            predicted_label = model(text, offsets)
            loss = criterion(predicted_label, label)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
            optimizer.step()
        model.eval()
        correct = count = 0
        with torch.no_grad():
            for label, text, offsets in valid_loader:
                correct += (model(text, offsets).argmax(1) == label).sum().item()
                count += label.size(0)
        accu_val = correct / count
        if total_accu is not None and total_accu > accu_val:
            scheduler.step()
        else:
            total_accu = accu_val
        print(f"epoch {epoch}: loss {loss.item():.4f} valid accuracy {accu_val:.3f}")
    print(f"FINAL loss={loss.item():.6f} valid_acc={accu_val:.4f}")


if __name__ == "__main__":
    main()
