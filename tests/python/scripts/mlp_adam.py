"""Small MLP trained with Adam on synthetic data; prints one loss per iteration."""
import argparse
import time

import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--iters", type=int, default=5)
parser.add_argument("--width", type=int, default=32)
parser.add_argument("--times", default=None, help="write per-iteration seconds to this file")
args = parser.parse_args()

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, args.width), nn.ReLU(), nn.Linear(args.width, 4))
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
inputs = torch.randn(args.iters, 8, 16)
labels = torch.randint(0, 4, (args.iters, 8))
times = []
for x, y in zip(inputs, labels):
    start = time.perf_counter()
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    times.append(time.perf_counter() - start)
    print(f"loss {loss.item():.8f}")
if args.times:
    with open(args.times, "w") as f:
        f.writelines(f"{t}\n" for t in times)
