"""Deep MLP classifier whose layers are built by a helper that initialises each Linear with normal_.

--bug: the helper re-seeds the global generator ("reproducible init") before each layer's normal_, so
every hidden layer of the same shape gets exactly the same weights.
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def make_linear(d_in, d_out, seed, reseed):
    layer = nn.Linear(d_in, d_out)
    if reseed:
        torch.manual_seed(seed)  # reproducible init
    nn.init.normal_(layer.weight, mean=0.0, std=(2.0 / d_in) ** 0.5)
    nn.init.zeros_(layer.bias)
    return layer


class DeepMLP(nn.Module):
    def __init__(self, d_in, hidden, depth, n_classes, seed, reseed):
        super().__init__()
        self.inp = make_linear(d_in, hidden, seed, reseed)
        self.hidden = nn.ModuleList(make_linear(hidden, hidden, seed, reseed) for _ in range(depth))
        self.out = make_linear(hidden, n_classes, seed, reseed)

    def forward(self, x):
        x = F.relu(self.inp(x))
        for layer in self.hidden:
            x = F.relu(layer(x))
        return self.out(x)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bug", action="store_true")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    x = torch.randn(256, 16, generator=gen)
    centers = torch.randn(4, 16, generator=gen) * 1.5
    y = torch.cdist(x, centers).argmin(dim=1)
    train_loader = DataLoader(TensorDataset(x, y), batch_size=args.batch_size, shuffle=True, generator=gen)

    model = DeepMLP(16, 64, depth=3, n_classes=4, seed=args.seed, reseed=args.bug)
    same = [torch.equal(a.weight, b.weight) for a, b in zip(model.hidden, list(model.hidden)[1:])]
    n_identical = sum(same) + 1 if any(same) else 0

    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    step = 0
    for epoch in range(args.epochs):
        for xb, yb in train_loader:
            loss = F.cross_entropy(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            if step % 8 == 0:
                print(f"epoch {epoch} step {step}: loss {loss.item():.4f}")

    with torch.no_grad():
        acc = (model(x).argmax(dim=1) == y).float().mean().item()
    print(f"train accuracy {acc:.3f}")
    print(f"SYMPTOM identical_hidden_layers_at_init={n_identical}")


if __name__ == "__main__":
    main()
