"""A tiny ResNet (a stem and three basic blocks with BatchNorm and identity or 1x1-projection shortcuts)
trained with DistributedDataParallel on 2 CPU ranks (gloo) on synthetic 3x16x16 images of four classes:
a DistributedSampler per split, SGD with momentum, Nesterov and weight decay, a MultiStepLR stepped per
epoch, and a validation pass per epoch in eval mode under torch.no_grad with the counts summed over ranks
by all_reduce; rank 0 logs."""
import argparse

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class BasicBlock(nn.Module):
    def __init__(self, in_ch, out_ch, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_ch, out_ch, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_ch)
        self.conv2 = nn.Conv2d(out_ch, out_ch, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_ch)
        self.shortcut = nn.Identity()
        if stride != 1 or in_ch != out_ch:
            self.shortcut = nn.Sequential(nn.Conv2d(in_ch, out_ch, 1, stride=stride, bias=False),
                                          nn.BatchNorm2d(out_ch))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class TinyResNet(nn.Module):
    def __init__(self, num_classes=4, width=8):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, padding=1, bias=False), nn.BatchNorm2d(width), nn.ReLU())
        self.layers = nn.Sequential(BasicBlock(width, width), BasicBlock(width, 2 * width, stride=2),
                                    BasicBlock(2 * width, 2 * width))
        self.head = nn.Linear(2 * width, num_classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.head(F.adaptive_avg_pool2d(x, 1).flatten(1))


def make_images(n, generator):
    """Four classes: a bright square in one of the four quadrants of one colour channel, plus noise."""
    labels = torch.randint(0, 4, (n,), generator=generator)
    images = 0.5 * torch.randn(n, 3, 16, 16, generator=generator)
    for i, c in enumerate(labels.tolist()):
        r, q = divmod(c, 2)
        images[i, c % 3, r * 8:(r + 1) * 8, q * 8:(q + 1) * 8] += 1.5
    return images, labels


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.05)
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(args.seed)

    gen = torch.Generator().manual_seed(args.seed)
    train_set = TensorDataset(*make_images(384, gen))
    val_set = TensorDataset(*make_images(128, gen))
    train_sampler = DistributedSampler(train_set, num_replicas=world, rank=rank, shuffle=True, seed=args.seed)
    val_sampler = DistributedSampler(val_set, num_replicas=world, rank=rank, shuffle=False)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, sampler=train_sampler)
    val_loader = DataLoader(val_set, batch_size=64, sampler=val_sampler)

    model = DDP(TinyResNet())
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, nesterov=True, weight_decay=5e-4)
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[2, 3], gamma=0.1)

    for epoch in range(args.epochs):
        train_sampler.set_epoch(epoch)
        model.train()
        train_stats = torch.zeros(2)
        for images, labels in train_loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(images), labels)
            loss.backward()
            optimizer.step()
            train_stats += torch.tensor([loss.item() * len(labels), len(labels)])
        scheduler.step()

        model.eval()
        val_stats = torch.zeros(3)
        with torch.no_grad():
            for images, labels in val_loader:
                logits = model(images)
                val_stats += torch.tensor([F.cross_entropy(logits, labels, reduction="sum").item(),
                                           (logits.argmax(1) == labels).sum().item(), len(labels)])
        dist.all_reduce(train_stats)
        dist.all_reduce(val_stats)
        train_loss = (train_stats[0] / train_stats[1]).item()
        val_loss, val_acc = (val_stats[0] / val_stats[2]).item(), (val_stats[1] / val_stats[2]).item()
        if rank == 0:
            print(f"epoch {epoch} lr {scheduler.get_last_lr()[0]:.4f}: train loss {train_loss:.4f}, "
                  f"val loss {val_loss:.4f}, val acc {val_acc:.4f}")

    if rank == 0:
        print(f"FINAL loss={train_loss:.6f} val_loss={val_loss:.6f} val_acc={val_acc:.4f}")
    dist.barrier()  # every rank is done before the group is torn down
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
