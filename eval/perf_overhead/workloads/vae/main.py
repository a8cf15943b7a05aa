"""Variational auto-encoder (pytorch/examples vae) on synthetic 28x28 images in [0, 1].

MLP 784-400-20, Adam, reconstruction BCE + KL divergence, batch 128.
Writes one wall time per training iteration (seconds) to ./iteration_times.txt, and the
process's CPU time per iteration to ./iteration_cpu_times.txt.
"""
import argparse
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn, optim
from torch.utils.data import TensorDataset

try:
    from workload_common import IterationTimer, add_common_arguments, batched_loader
except ModuleNotFoundError:  # run in place: the shared module is in workloads/ (the runner's copies have it beside)
    sys.path.append(str(Path(__file__).resolve().parent.parent))
    from workload_common import IterationTimer, add_common_arguments, batched_loader


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 400)
        self.fc21 = nn.Linear(400, 20)
        self.fc22 = nn.Linear(400, 20)
        self.fc3 = nn.Linear(20, 400)
        self.fc4 = nn.Linear(400, 784)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, 784))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


def loss_function(recon_x, x, mu, logvar):
    bce = F.binary_cross_entropy(recon_x, x.view(-1, 784), reduction="sum")
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return bce + kld


def main():
    parser = argparse.ArgumentParser(description="VAE on synthetic images")
    add_common_arguments(parser, default_seed=1)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--num-samples", type=int, default=2560, help="synthetic training set size")
    parser.add_argument("--lr", type=float, default=1e-3)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    generator = torch.Generator().manual_seed(args.seed)
    images = torch.rand(args.num_samples, 1, 28, 28, generator=generator)
    labels = torch.randint(0, 10, (args.num_samples,), generator=generator)
    train_loader = batched_loader(TensorDataset(images, labels), args.batch_size)

    model = VAE().to(device)
    optimizer = optim.Adam(model.parameters(), lr=args.lr)

    with IterationTimer(args.times_file, args.cpu_times_file, device) as timer:
        iteration = 0
        while iteration < args.iters:
            model.train()
            for batch_idx, (data, _) in enumerate(train_loader):
                with timer.iteration():
                    data = data.to(device)
                    optimizer.zero_grad()
                    recon_batch, mu, logvar = model(data)
                    loss = loss_function(recon_batch, data, mu, logvar)
                    loss.backward()
                    optimizer.step()
                iteration += 1
                if iteration >= args.iters:
                    break
    print(f"vae: {iteration} iterations, last loss {loss.item() / len(data):.4f}")


if __name__ == "__main__":
    main()
