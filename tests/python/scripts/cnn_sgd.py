"""Small CNN trained with SGD on synthetic images, through a DataLoader; prints one loss per iteration."""
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--iters", type=int, default=4)
parser.add_argument("--workers", type=int, default=0)
parser.add_argument("--times", default=None)
args = parser.parse_args()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3)
        self.conv2 = nn.Conv2d(8, 16, 3)
        self.fc = nn.Linear(16 * 5 * 5, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(torch.flatten(x, 1))


def main():
    torch.manual_seed(0)
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    data = TensorDataset(torch.randn(args.iters * 16, 1, 28, 28), torch.randint(0, 10, (args.iters * 16,)))
    train_loader = DataLoader(data, batch_size=16, num_workers=args.workers)
    times = []
    model.train()
    for images, target in train_loader:
        start = time.perf_counter()
        optimizer.zero_grad()
        loss = F.cross_entropy(model(images), target)
        loss.backward()
        optimizer.step()
        times.append(time.perf_counter() - start)
        print(f"loss {loss.item():.8f}")
    if args.times:
        with open(args.times, "w") as f:
            f.writelines(f"{t}\n" for t in times)


if __name__ == "__main__":
    main()
