"""Siamese network (pytorch/examples siamese_network) on synthetic image pairs.

Two 28x28 images share one CNN backbone; the concatenated embeddings go through a small head and a
sigmoid, trained with BCE on "same class or not". Adadelta, StepLR, batch 64, as in the example. The
example's backbone is torchvision's ResNet-18; this one is a two-layer CNN (no torchvision here, and the
per-iteration time stays in the tens of milliseconds on a small CPU).
Writes one wall time per training iteration (seconds) to ./iteration_times.txt, and the
process's CPU time per iteration to ./iteration_cpu_times.txt.
"""
import argparse
import sys
from pathlib import Path

import torch
import torch.nn as nn
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import Dataset

try:
    from workload_common import IterationTimer, add_common_arguments, batched_loader
except ModuleNotFoundError:  # run in place: the shared module is in workloads/ (the runner's copies have it beside)
    sys.path.append(str(Path(__file__).resolve().parent.parent))
    from workload_common import IterationTimer, add_common_arguments, batched_loader


class SiameseNetwork(nn.Module):
    def __init__(self, width=32):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(1, width, 3, 1),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(width, width * 2, 3, 1),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Flatten(),
        )
        self.fc_in_features = width * 2 * 5 * 5
        self.fc = nn.Sequential(
            nn.Linear(self.fc_in_features * 2, 256),
            nn.ReLU(inplace=True),
            nn.Linear(256, 1),
        )
        self.sigmoid = nn.Sigmoid()
        self.fc.apply(self.init_weights)

    def init_weights(self, m):
        if isinstance(m, nn.Linear):
            torch.nn.init.xavier_uniform_(m.weight)
            m.bias.data.fill_(0.01)

    def forward_once(self, x):
        return self.backbone(x)

    def forward(self, input1, input2):
        output1 = self.forward_once(input1)
        output2 = self.forward_once(input2)
        output = torch.cat((output1, output2), 1)
        output = self.fc(output)
        return self.sigmoid(output)


class SyntheticPairs(Dataset):
    """Pairs of noisy class templates; the target is 1 when both images show the same class."""

    def __init__(self, num_pairs, seed):
        generator = torch.Generator().manual_seed(seed)
        templates = torch.rand(10, 1, 28, 28, generator=generator)
        classes1 = torch.randint(0, 10, (num_pairs,), generator=generator)
        same = torch.rand(num_pairs, generator=generator) < 0.5
        classes2 = torch.where(same, classes1, (classes1 + torch.randint(1, 10, (num_pairs,), generator=generator)) % 10)
        self.images1 = templates[classes1] + 0.3 * torch.randn(num_pairs, 1, 28, 28, generator=generator)
        self.images2 = templates[classes2] + 0.3 * torch.randn(num_pairs, 1, 28, 28, generator=generator)
        self.targets = same.float()

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, index):
        return self.images1[index], self.images2[index], self.targets[index]


def main():
    parser = argparse.ArgumentParser(description="Siamese network on synthetic image pairs")
    add_common_arguments(parser, default_seed=1)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--width", type=int, default=None, help="backbone channels (default: 32 on cuda, 8 on cpu)")
    parser.add_argument("--num-pairs", type=int, default=1280, help="synthetic training set size")
    parser.add_argument("--lr", type=float, default=1.0)
    parser.add_argument("--gamma", type=float, default=0.7)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    width = args.width or (32 if device.type == "cuda" else 8)
    train_loader = batched_loader(SyntheticPairs(args.num_pairs, args.seed), args.batch_size)

    model = SiameseNetwork(width).to(device)
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)
    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    criterion = nn.BCELoss()

    with IterationTimer(args.times_file, args.cpu_times_file, device) as timer:
        iteration = 0
        while iteration < args.iters:
            model.train()
            for batch_idx, (images_1, images_2, targets) in enumerate(train_loader):
                with timer.iteration():
                    images_1, images_2, targets = images_1.to(device), images_2.to(device), targets.to(device)
                    optimizer.zero_grad()
                    outputs = model(images_1, images_2).squeeze()
                    loss = criterion(outputs, targets)
                    loss.backward()
                    optimizer.step()
                iteration += 1
                if iteration >= args.iters:
                    break
            scheduler.step()
    print(f"siamese: {iteration} iterations, last loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
