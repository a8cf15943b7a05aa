"""DDP training (2 ranks, gloo, CPU) of a small classifier, with a periodic validation pass in bfloat16
to save memory.

--bug: the validation casts the live DDP model to bfloat16 and back (model.to(torch.bfloat16) ...
model.to(torch.float32)). The dtype round trip swaps the parameters' data, which drops the gradient
accumulators DDP hooked into: from then on gradients are no longer all-reduced and, with each rank on
its own data shard, the replicas silently drift apart. The correct variant validates a bfloat16 copy.
"""
import argparse
import copy

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class Net(nn.Module):
    def __init__(self, d_in=16, hidden=64, n_classes=4):
        super().__init__()
        self.fc1 = nn.Linear(d_in, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, n_classes)

    def forward(self, x):
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


def make_dataset(n, seed):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 16, generator=gen)
    w = torch.randn(16, 4, generator=torch.Generator().manual_seed(1234))
    y = (x @ w).argmax(dim=1)
    return TensorDataset(x, y)


def evaluate(model, val_set, bug):
    x, y = val_set.tensors
    if bug:
        model.eval()
        model.to(torch.bfloat16)
        with torch.no_grad():
            loss = F.cross_entropy(model(x.to(torch.bfloat16)).float(), y)
        model.to(torch.float32)
        model.train()
    else:
        eval_model = copy.deepcopy(model.module).to(torch.bfloat16).eval()
        with torch.no_grad():
            loss = F.cross_entropy(eval_model(x.to(torch.bfloat16)).float(), y)
    return loss.item()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bug", action="store_true")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--eval-interval", type=int, default=5)
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank = dist.get_rank()

    torch.manual_seed(args.seed)
    train_set = make_dataset(384, args.seed)
    val_set = make_dataset(128, args.seed + 1000)
    sampler = DistributedSampler(train_set, shuffle=True, seed=args.seed)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, sampler=sampler)

    model = Net()
    model = DDP(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    global_step = 0
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        model.train()
        for x, y in train_loader:
            if global_step > 0 and global_step % args.eval_interval == 0:
                val_loss = evaluate(model, val_set, args.bug)
                if rank == 0:
                    print(f"step {global_step}: val loss {val_loss:.4f}")
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            global_step += 1

    # are the replicas still in sync?
    flat = torch.cat([p.detach().reshape(-1) for p in model.module.parameters()])
    gathered = [torch.zeros_like(flat) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, flat)
    val_loss = evaluate(model, val_set, bug=False)
    if rank == 0:
        diff = (gathered[0] - gathered[1]).abs().max().item()
        print(f"final val loss {val_loss:.4f}")
        print(f"SYMPTOM rank_weight_diff={diff:.6f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
