"""MNIST CNN (pytorch/examples mnist): Adadelta, StepLR, batch 64, on synthetic 28x28 digits.

Writes one wall time per training iteration (seconds) to ./iteration_times.txt, and the
process's CPU time per iteration to ./iteration_cpu_times.txt.
"""
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import BatchSampler, DataLoader, SequentialSampler, TensorDataset


class Net(nn.Module):
    """The example's CNN; `width` scales the conv channels (1.0 = the original 32/64)."""

    def __init__(self, width=1.0):
        super().__init__()
        c1, c2 = max(1, round(32 * width)), max(1, round(64 * width))
        self.conv1 = nn.Conv2d(1, c1, 3, 1)
        self.conv2 = nn.Conv2d(c1, c2, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(c2 * 12 * 12, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.dropout2(x)
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


def synthetic_mnist(num_samples, generator):
    """Digits as noisy class templates: learnable, deterministic, no download."""
    labels = torch.randint(0, 10, (num_samples,), generator=generator)
    templates = torch.rand(10, 1, 28, 28, generator=generator)
    noise = torch.randn(num_samples, 1, 28, 28, generator=generator) * 0.3
    images = (templates[labels] + noise - 0.1307) / 0.3081
    return TensorDataset(images, labels)


def batched_loader(dataset, batch_size):
    """A DataLoader that fetches each batch with one indexing call (a list of indices) rather than
    batch_size item fetches and a collate. Loading is outside the timed step; this keeps it cheap under
    the settrace baseline, which would otherwise spend most of its time limit formatting sample lists."""
    sampler = BatchSampler(SequentialSampler(dataset), batch_size, drop_last=False)
    return DataLoader(dataset, sampler=sampler, batch_size=None)


def main():
    parser = argparse.ArgumentParser(description="MNIST CNN on synthetic data")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--iters", type=int, default=50, help="training iterations to run")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--width", type=float, default=None,
                        help="conv channel multiplier (default: 1.0 on cuda, 0.25 on cpu)")
    parser.add_argument("--num-samples", type=int, default=1280, help="synthetic training set size")
    parser.add_argument("--lr", type=float, default=1.0)
    parser.add_argument("--gamma", type=float, default=0.7)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--times-file", default="iteration_times.txt", help="wall time per iteration")
    parser.add_argument("--cpu-times-file", default="iteration_cpu_times.txt",
                        help="CPU time of the process (all its threads) per iteration")
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    if args.width is None:
        args.width = 1.0 if device.type == "cuda" else 0.25
    dataset = synthetic_mnist(args.num_samples, torch.Generator().manual_seed(args.seed))
    train_loader = batched_loader(dataset, args.batch_size)

    model = Net(args.width).to(device)
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)
    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)

    times_file = open(args.times_file, "w")
    cpu_times_file = open(args.cpu_times_file, "w")
    iteration = 0
    epoch = 0
    while iteration < args.iters:
        epoch += 1
        model.train()
        for batch_idx, (data, target) in enumerate(train_loader):
            iter_start, cpu_start = time.perf_counter(), time.process_time()
            data, target = data.to(device), target.to(device)
            optimizer.zero_grad()
            output = model(data)
            loss = F.nll_loss(output, target)
            loss.backward()
            optimizer.step()
            if device.type == "cuda":
                torch.cuda.synchronize()
            wall_time, cpu_time = time.perf_counter() - iter_start, time.process_time() - cpu_start
            times_file.write(f"{wall_time}\n")
            times_file.flush()
            cpu_times_file.write(f"{cpu_time}\n")
            cpu_times_file.flush()
            iteration += 1
            if iteration >= args.iters:
                break
        scheduler.step()
    times_file.close()
    cpu_times_file.close()
    print(f"mnist: {iteration} iterations, {epoch} epochs, last loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
