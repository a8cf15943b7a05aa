"""Training on the meta device (a stand-in for a GPU, device_reads.py), or on the device TRAINING_DEVICE names
(cuda, where one is), with the tool's blocking reads of device tensors counted, from the model's creation
(the tracker's first write) on: after each step, the count so far is appended to the file DEVICE_READS_OUT
names (one JSON line per step: step, reads, where)."""
import json
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from device_reads import BlockingReads  # noqa: E402

out = open(os.environ["DEVICE_READS_OUT"], "w")
device = os.environ.get("TRAINING_DEVICE", "meta")
with BlockingReads() as reads:
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = torch.randn(8, 16, device=device)
    y = torch.randint(0, 4, (8,), device=device)
    for step in range(6):
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=False)
        optimizer.step()
        out.write(json.dumps({"step": step, "reads": len(reads.reads), "where": sorted(set(w for _, w in reads.reads))}) + "\n")
        out.flush()
