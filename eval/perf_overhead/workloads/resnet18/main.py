"""ResNet-18 image classification (the torchvision architecture, defined here), synthetic images.

SGD with momentum and weight decay, cross-entropy, as in pytorch/examples imagenet. Image size, batch size and
channel width default to 224 / 256 / 1.0 on cuda (the paper's setting) and to 32 / 16 / 0.25 on the CPU.
Writes one wall time per training iteration (seconds) to ./iteration_times.txt, and the
process's CPU time per iteration to ./iteration_cpu_times.txt.
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


def conv3x3(in_planes, out_planes, stride=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class ResNet(nn.Module):
    """torchvision's ResNet; `width` scales every stage's channels (1.0 = 64/128/256/512)."""

    def __init__(self, layers=(2, 2, 2, 2), num_classes=1000, width=1.0):
        super().__init__()
        planes = [max(1, round(p * width)) for p in (64, 128, 256, 512)]
        self.inplanes = planes[0]
        self.conv1 = nn.Conv2d(3, planes[0], kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(planes[0])
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(planes[0], layers[0])
        self.layer2 = self._make_layer(planes[1], layers[1], stride=2)
        self.layer3 = self._make_layer(planes[2], layers[2], stride=2)
        self.layer4 = self._make_layer(planes[3], layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(planes[3], num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def _make_layer(self, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, planes, kernel_size=1, stride=stride, bias=False),
                nn.BatchNorm2d(planes),
            )
        layers = [BasicBlock(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes
        layers += [BasicBlock(planes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


def resnet18(num_classes=1000, width=1.0):
    return ResNet((2, 2, 2, 2), num_classes, width)


def main():
    parser = argparse.ArgumentParser(description="ResNet-18 on synthetic images")
    add_common_arguments(parser, default_seed=1)
    parser.add_argument("--batch-size", type=int, default=None, help="default: 256 on cuda, 16 on cpu")
    parser.add_argument("--image-size", type=int, default=None, help="default: 224 on cuda, 32 on cpu")
    parser.add_argument("--width", type=float, default=None,
                        help="channel multiplier (default: 1.0 on cuda, 0.25 on cpu)")
    parser.add_argument("--num-batches", type=int, default=20, help="distinct synthetic batches per epoch")
    parser.add_argument("--num-classes", type=int, default=1000)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--weight-decay", type=float, default=1e-4)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    on_gpu = device.type == "cuda"
    batch_size = args.batch_size or (256 if on_gpu else 16)
    image_size = args.image_size or (224 if on_gpu else 32)
    width = args.width or (1.0 if on_gpu else 0.25)

    generator = torch.Generator().manual_seed(args.seed)
    num_samples = batch_size * args.num_batches
    images = torch.randn(num_samples, 3, image_size, image_size, generator=generator)
    labels = torch.randint(0, args.num_classes, (num_samples,), generator=generator)
    train_loader = batched_loader(TensorDataset(images, labels), batch_size)

    model = resnet18(args.num_classes, width).to(device)
    criterion = nn.CrossEntropyLoss().to(device)
    optimizer = optim.SGD(model.parameters(), args.lr, momentum=args.momentum, weight_decay=args.weight_decay)

    with IterationTimer(args.times_file, args.cpu_times_file, device) as timer:
        iteration = 0
        while iteration < args.iters:
            model.train()
            for i, (images, target) in enumerate(train_loader):
                with timer.iteration():
                    images, target = images.to(device), target.to(device)
                    output = model(images)
                    loss = criterion(output, target)
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                iteration += 1
                if iteration >= args.iters:
                    break
    print(f"resnet18: {iteration} iterations, last loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
