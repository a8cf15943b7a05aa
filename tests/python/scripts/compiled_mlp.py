"""Small MLP trained with a torch.compile'd model and a torch.compile'd optimizer step on synthetic data.
`--model encoder`: a Transformer encoder layer instead, between modules whose methods have default
arguments (torch's MultiheadAttention.forward, and a module of the script's own with a graph break).

Writes the losses (as float hex), the final parameters and dynamo's graph-break, frame and graph counts
to --result, so that a run under traincheck-collect can be compared with a plain run bit for bit.
"""
import argparse
import json

import torch
import torch.nn as nn
from torch._dynamo.utils import counters

parser = argparse.ArgumentParser()
parser.add_argument("--iters", type=int, default=4)
parser.add_argument("--backend", default="aot_eager")
parser.add_argument("--model", choices=("mlp", "encoder"), default="mlp")
parser.add_argument("--result", required=True)
args = parser.parse_args()



class Tokens(nn.Module):
    """(batch, 16) -> (batch, 4 tokens, 8): a forward and a helper with defaults, and a graph break."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 8)

    def scaled(self, x, scale=0.5, *, shift=0.0):
        return x * scale + shift

    def forward(self, x, tokens=4):
        h = self.proj(x.reshape(x.shape[0], tokens, -1))
        torch._dynamo.graph_break()
        return self.scaled(h, shift=0.1)


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.tokens = Tokens()
        self.layer = nn.TransformerEncoderLayer(8, nhead=2, dim_feedforward=16, dropout=0.0, batch_first=True)
        self.head = nn.Linear(8, 4)

    def forward(self, x, dim=1):
        return self.head(self.layer(self.tokens(x)).mean(dim))


torch.manual_seed(0)
if args.model == "mlp":
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
else:
    model = Encoder()
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
compiled = torch.compile(model, backend=args.backend)


@torch.compile(backend=args.backend)
def opt_step():
    optimizer.step()


inputs = torch.randn(args.iters, 8, 16)
labels = torch.randint(0, 4, (args.iters, 8))
losses = []
for x, y in zip(inputs, labels):
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(compiled(x), y)
    loss.backward()
    opt_step()
    losses.append(loss.item())
with open(args.result, "w") as f:
    json.dump({
        "losses": [float(v).hex() for v in losses],
        "params": [[float(v).hex() for v in p.detach().flatten().tolist()] for p in model.parameters()],
        "graph_breaks": sum(counters["graph_break"].values()),
        "frames": dict(counters["frames"]),
        "unique_graphs": counters["stats"]["unique_graphs"],
    }, f)
