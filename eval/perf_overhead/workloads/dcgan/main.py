"""DCGAN (pytorch/examples dcgan) on synthetic 64x64 RGB images.

One iteration = one discriminator update (real + fake) and one generator update, Adam, BCE loss. The
feature widths ngf/ndf and the batch size default to 64 / 64 / 128 on cuda (the example's values) and to
8 / 8 / 8 on the CPU.
Writes one wall time per training iteration (seconds) to ./iteration_times.txt, and the process's CPU
time per iteration to ./iteration_cpu_times.txt.
"""
import argparse
import sys
from pathlib import Path

import torch
import torch.nn as nn
import torch.optim as optim
from torch.utils.data import TensorDataset

try:
    from workload_common import IterationTimer, add_common_arguments, batched_loader
except ModuleNotFoundError:  # run in place: the shared module is in workloads/ (the runner's copies have it beside)
    sys.path.append(str(Path(__file__).resolve().parent.parent))
    from workload_common import IterationTimer, add_common_arguments, batched_loader


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        torch.nn.init.normal_(m.weight, 0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        torch.nn.init.normal_(m.weight, 1.0, 0.02)
        torch.nn.init.zeros_(m.bias)


class Generator(nn.Module):
    def __init__(self, nz, ngf, nc):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 8, 4, 1, 0, bias=False),
            nn.BatchNorm2d(ngf * 8),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 8, ngf * 4, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf * 4),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False),
            nn.Tanh(),
        )

    def forward(self, input):
        return self.main(input)


class Discriminator(nn.Module):
    def __init__(self, ndf, nc):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, ndf * 4, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 4),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 4, ndf * 8, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 8),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 8, 1, 4, 1, 0, bias=False),
            nn.Sigmoid(),
        )

    def forward(self, input):
        return self.main(input).view(-1, 1).squeeze(1)


def main():
    parser = argparse.ArgumentParser(description="DCGAN on synthetic images")
    add_common_arguments(parser, default_seed=1)
    parser.add_argument("--batch-size", type=int, default=None, help="default: 128 on cuda, 8 on cpu")
    parser.add_argument("--ngf", type=int, default=None, help="default: 64 on cuda, 8 on cpu")
    parser.add_argument("--ndf", type=int, default=None, help="default: 64 on cuda, 8 on cpu")
    parser.add_argument("--nz", type=int, default=100)
    parser.add_argument("--num-batches", type=int, default=20, help="distinct synthetic batches per epoch")
    parser.add_argument("--lr", type=float, default=0.0002)
    parser.add_argument("--beta1", type=float, default=0.5)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    on_gpu = device.type == "cuda"
    batch_size = args.batch_size or (128 if on_gpu else 8)
    ngf = args.ngf or (64 if on_gpu else 8)
    ndf = args.ndf or (64 if on_gpu else 8)
    nc, nz = 3, args.nz

    generator = torch.Generator().manual_seed(args.seed)
    images = torch.rand(batch_size * args.num_batches, nc, 64, 64, generator=generator) * 2 - 1
    dataloader = batched_loader(TensorDataset(images), batch_size)

    netG = Generator(nz, ngf, nc).to(device)
    netG.apply(weights_init)
    netD = Discriminator(ndf, nc).to(device)
    netD.apply(weights_init)
    criterion = nn.BCELoss()
    real_label, fake_label = 1.0, 0.0
    optimizerD = optim.Adam(netD.parameters(), lr=args.lr, betas=(args.beta1, 0.999))
    optimizerG = optim.Adam(netG.parameters(), lr=args.lr, betas=(args.beta1, 0.999))

    with IterationTimer(args.times_file, args.cpu_times_file, device) as timer:
        iteration = 0
        while iteration < args.iters:
            for i, (data,) in enumerate(dataloader):
                with timer.iteration():
                    # (1) Update D network: maximize log(D(x)) + log(1 - D(G(z)))
                    netD.zero_grad()
                    real_cpu = data.to(device)
                    b_size = real_cpu.size(0)
                    label = torch.full((b_size,), real_label, dtype=real_cpu.dtype, device=device)
                    output = netD(real_cpu)
                    errD_real = criterion(output, label)
                    errD_real.backward()
                    noise = torch.randn(b_size, nz, 1, 1, device=device)
                    fake = netG(noise)
                    label.fill_(fake_label)
                    output = netD(fake.detach())
                    errD_fake = criterion(output, label)
                    errD_fake.backward()
                    errD = errD_real + errD_fake
                    optimizerD.step()
                    # (2) Update G network: maximize log(D(G(z)))
                    netG.zero_grad()
                    label.fill_(real_label)
                    output = netD(fake)
                    errG = criterion(output, label)
                    errG.backward()
                    optimizerG.step()
                iteration += 1
                if iteration >= args.iters:
                    break
    print(f"dcgan: {iteration} iterations, Loss_D {errD.item():.4f} Loss_G {errG.item():.4f}")


if __name__ == "__main__":
    main()
