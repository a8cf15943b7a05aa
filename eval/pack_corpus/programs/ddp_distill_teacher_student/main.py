"""Knowledge distillation data-parallel on 2 CPU ranks (gloo): rank 0 fits a wide teacher MLP and saves it,
every rank loads it after a barrier, freezes it (requires_grad off, eval mode, forward under no_grad) and
keeps it out of DDP; a small student MLP wrapped in DistributedDataParallel learns from the teacher's
temperature-softened outputs (KL divergence) mixed with the hard labels (cross-entropy), using a
DistributedSampler and SGD with Nesterov momentum, no scheduler. The student's held-out accuracy is summed
over ranks at the end."""
import argparse
import os
import shutil

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

NUM_CLASSES = 5


def make_teacher():
    return nn.Sequential(nn.Linear(20, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, NUM_CLASSES))


def fit_teacher(teacher, dataset, epochs, seed):
    loader = DataLoader(dataset, batch_size=64, shuffle=True, generator=torch.Generator().manual_seed(seed))
    optimizer = torch.optim.Adam(teacher.parameters(), lr=2e-3)
    teacher.train()
    for _ in range(epochs):
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(teacher(xb), yb)
            loss.backward()
            optimizer.step()
    return loss.item()


def distillation_loss(student_logits, teacher_logits, labels, temperature, alpha):
    soft = F.kl_div(F.log_softmax(student_logits / temperature, dim=1),
                    F.softmax(teacher_logits / temperature, dim=1), reduction="batchmean")
    hard = F.cross_entropy(student_logits, labels)
    return alpha * temperature ** 2 * soft + (1 - alpha) * hard


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--teacher-epochs", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--temperature", type=float, default=4.0)
    parser.add_argument("--alpha", type=float, default=0.8)
    parser.add_argument("--out-dir", default="distill_out")
    args = parser.parse_args()

    dist.init_process_group(backend="gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(args.seed)

    w1, w2 = torch.randn(20, 32), torch.randn(32, NUM_CLASSES)
    x = torch.randn(640, 20)
    y = (torch.tanh(x @ w1) @ w2).argmax(1)
    train_set, val_set = TensorDataset(x[:512], y[:512]), TensorDataset(x[512:], y[512:])

    teacher = make_teacher()
    model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, NUM_CLASSES))

    teacher_path = os.path.join(args.out_dir, "teacher.pt")
    if rank == 0:
        os.makedirs(args.out_dir, exist_ok=True)
        teacher_loss = fit_teacher(teacher, train_set, args.teacher_epochs, args.seed)
        torch.save(teacher.state_dict(), teacher_path)
        print(f"teacher trained: last loss {teacher_loss:.4f}")
    dist.barrier()
    teacher.load_state_dict(torch.load(teacher_path, map_location="cpu"))
    teacher.eval()
    for p in teacher.parameters():
        p.requires_grad_(False)

    model = DDP(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-4)
    sampler = DistributedSampler(train_set, num_replicas=world, rank=rank, shuffle=True, seed=args.seed)
    loader = DataLoader(train_set, batch_size=args.batch_size, sampler=sampler)

    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        model.train()
        for xb, yb in loader:
            with torch.no_grad():
                teacher_logits = teacher(xb)
            loss = distillation_loss(model(xb), teacher_logits, yb, args.temperature, args.alpha)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if rank == 0:
            print(f"epoch {epoch}: loss {loss.item():.4f}")

    # each rank scores its half of the held-out set
    model.eval()
    xv, yv = val_set[rank::world]
    with torch.no_grad():
        stats = torch.tensor([(model(xv).argmax(1) == yv).sum().item(),
                              (teacher(xv).argmax(1) == yv).sum().item(), len(yv), loss.item()],
                             dtype=torch.float64)
    dist.all_reduce(stats, op=dist.ReduceOp.SUM)
    dist.barrier()
    if rank == 0:
        shutil.rmtree(args.out_dir, ignore_errors=True)
        print(f"FINAL loss={stats[3].item() / world:.6f} student_acc={stats[0].item() / stats[2].item():.4f} "
              f"teacher_acc={stats[1].item() / stats[2].item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
