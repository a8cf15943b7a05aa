"""MNIST CNN (pytorch/examples mnist): Adadelta, StepLR, batch 64, on synthetic 28x28 digits.

Writes one wall time per training iteration (seconds) to ./iteration_times.txt, and the
process's CPU time per iteration to ./iteration_cpu_times.txt.
"""
import argparse
import sys
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import TensorDataset

try:
    from workload_common import IterationTimer, add_common_arguments, batched_loader
except ModuleNotFoundError:  # run in place: the shared module is in workloads/ (the runner's copies have it beside)
    sys.path.append(str(Path(__file__).resolve().parent.parent))
    from workload_common import IterationTimer, add_common_arguments, batched_loader


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


def main():
    parser = argparse.ArgumentParser(description="MNIST CNN on synthetic data")
    add_common_arguments(parser, default_seed=1)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--width", type=float, default=None,
                        help="conv channel multiplier (default: 1.0 on cuda, 0.25 on cpu)")
    parser.add_argument("--num-samples", type=int, default=1280, help="synthetic training set size")
    parser.add_argument("--lr", type=float, default=1.0)
    parser.add_argument("--gamma", type=float, default=0.7)
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

    with IterationTimer(args.times_file, args.cpu_times_file, device) as timer:
        iteration = 0
        epoch = 0
        while iteration < args.iters:
            epoch += 1
            model.train()
            for batch_idx, (data, target) in enumerate(train_loader):
                with timer.iteration():
                    data, target = data.to(device), target.to(device)
                    optimizer.zero_grad()
                    output = model(data)
                    loss = F.nll_loss(output, target)
                    loss.backward()
                    optimizer.step()
                iteration += 1
                if iteration >= args.iters:
                    break
            scheduler.step()
    print(f"mnist: {iteration} iterations, {epoch} epochs, last loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
