"""Small MLP classifier with dropout; periodic validation inside the training loop (nanoGPT style).

--bug: estimate_loss() switches the model to eval mode and never switches it back, so every training
step after the first validation runs with dropout disabled.
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self, d_in=20, hidden=96, n_classes=4, p_drop=0.3):
        super().__init__()
        self.fc1 = nn.Linear(d_in, hidden)
        self.drop1 = nn.Dropout(p_drop)
        self.fc2 = nn.Linear(hidden, hidden)
        self.drop2 = nn.Dropout(p_drop)
        self.out = nn.Linear(hidden, n_classes)

    def forward(self, x):
        x = self.drop1(F.relu(self.fc1(x)))
        x = self.drop2(F.relu(self.fc2(x)))
        return self.out(x)


def make_data(n, gen):
    x = torch.randn(n, 20, generator=gen)
    w = torch.randn(20, 4, generator=gen)
    y = (x @ w + 0.3 * torch.randn(n, 4, generator=gen)).argmax(dim=1)
    return x, y


def get_batch(x, y, batch_size, gen):
    idx = torch.randint(0, x.shape[0], (batch_size,), generator=gen)
    return x[idx], y[idx]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bug", action="store_true")
    parser.add_argument("--max-iters", type=int, default=24)
    parser.add_argument("--eval-interval", type=int, default=5)
    parser.add_argument("--eval-iters", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=3e-3)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    data_x, data_y = make_data(1024, gen)
    split = 768
    train_x, train_y = data_x[:split], data_y[:split]
    val_x, val_y = data_x[split:], data_y[split:]

    model = MLP()
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)

    @torch.no_grad()
    def estimate_loss():
        out = {}
        model.eval()
        for name, (sx, sy) in (("train", (train_x, train_y)), ("val", (val_x, val_y))):
            losses = torch.zeros(args.eval_iters)
            for k in range(args.eval_iters):
                xb, yb = get_batch(sx, sy, args.batch_size, gen)
                losses[k] = F.cross_entropy(model(xb), yb).item()
            out[name] = losses.mean().item()
        if not args.bug:
            model.train()
        return out

    model.train()
    first_loss = last_loss = None
    for iter_num in range(args.max_iters):
        if iter_num > 0 and iter_num % args.eval_interval == 0:
            losses = estimate_loss()
            print(f"iter {iter_num}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}")

        xb, yb = get_batch(train_x, train_y, args.batch_size, gen)
        logits = model(xb)
        loss = F.cross_entropy(logits, yb)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if first_loss is None:
            first_loss = loss.item()
        last_loss = loss.item()

    print(f"first loss {first_loss:.4f}, last loss {last_loss:.4f}")
    print(f"SYMPTOM model_training={model.training}")


if __name__ == "__main__":
    main()
