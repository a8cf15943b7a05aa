"""A small CPU workload shaped like the original's Figure 7 Transformer script: module-level code that
imports `traincheck.instrumentor.tracer` and `annotate_stage`, disables the wrapper at import, annotates
its stages itself and enables the wrapper for the batch loop of train()."""
import argparse

import torch
import torch.nn as nn

from traincheck import annotate_stage
import traincheck.instrumentor.tracer as tc_tracer

tc_tracer.DISABLE_WRAPPER = True
VOCAB = torch.arange(10)  # before the init stage: not recorded

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--bptt", type=int, default=5)
args = parser.parse_args()

annotate_stage("init")

torch.manual_seed(0)
train_data = torch.randint(0, 10, (16, 2))
val_data = torch.randint(0, 10, (11, 2))
model = nn.Sequential(nn.Embedding(10, 8), nn.Linear(8, 10), nn.LogSoftmax(dim=-1))
criterion = nn.NLLLoss()


def get_batch(source, i):
    seq_len = min(args.bptt, len(source) - 1 - i)
    return source[i : i + seq_len], source[i + 1 : i + 1 + seq_len].reshape(-1)


def evaluate(data_source):
    annotate_stage("evaluation")
    model.eval()
    total_loss = 0.0
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, args.bptt):
            data, targets = get_batch(data_source, i)
            output = model(data).view(-1, 10)
            total_loss += len(data) * criterion(output, targets).item()
    return total_loss / (len(data_source) - 1)


def train():
    annotate_stage("training")
    model.train()
    tc_tracer.DISABLE_WRAPPER = False
    for batch, i in enumerate(range(0, train_data.size(0) - 1, args.bptt)):
        data, targets = get_batch(train_data, i)
        model.zero_grad()
        loss = criterion(model(data).view(-1, 10), targets)
        loss.backward()
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)


lr = 0.5
for epoch in range(1, args.epochs + 1):
    train()
    val_loss = evaluate(val_data)
    print(f"epoch {epoch} valid loss {val_loss:.3f}")
