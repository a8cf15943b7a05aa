"""torch.compile'd model in an ordinary loop: the module is compiled once (backend aot_eager: dynamo's
graph capture and AOT autograd without inductor's C++ code generation, which takes minutes on a small
CPU; --backend inductor for the default), Adam, a no_grad evaluation with the compiled model in eval mode
(a recompilation)."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--backend", default="aot_eager")
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, 3))
    compiled = torch.compile(model, backend=args.backend)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    w = torch.randn(10, 3)

    compiled.train()
    for step in range(args.steps):
        x = torch.randn(32, 10)
        y = (x @ w).argmax(1)
        optimizer.zero_grad()
        loss = F.cross_entropy(compiled(x), y)
        loss.backward()
        optimizer.step()
    compiled.eval()
    with torch.no_grad():
        x = torch.randn(128, 10)
        acc = (compiled(x).argmax(1) == (x @ w).argmax(1)).float().mean().item()
    print(f"FINAL loss={loss.item():.6f} acc={acc:.4f}")


if __name__ == "__main__":
    main()
