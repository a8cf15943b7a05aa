"""models.resnet18: torchvision's ResNet-18 (BasicBlock, [2, 2, 2, 2], its weight initialisation).
The scripts list `models.__dict__`'s lowercase callables as architectures: resnet18 is the only one here
(the helpers are capitalised or private)."""
import torch.nn as _nn


class BasicBlock(_nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = _nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = _nn.BatchNorm2d(planes)
        self.relu = _nn.ReLU(inplace=True)
        self.conv2 = _nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = _nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class ResNet(_nn.Module):
    def __init__(self, layers, num_classes=1000):
        super().__init__()
        self.inplanes = 64
        self.conv1 = _nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = _nn.BatchNorm2d(64)
        self.relu = _nn.ReLU(inplace=True)
        self.maxpool = _nn.MaxPool2d(3, 2, 1)
        self.layer1 = self._make_layer(64, layers[0])
        self.layer2 = self._make_layer(128, layers[1], stride=2)
        self.layer3 = self._make_layer(256, layers[2], stride=2)
        self.layer4 = self._make_layer(512, layers[3], stride=2)
        self.avgpool = _nn.AdaptiveAvgPool2d((1, 1))
        self.fc = _nn.Linear(512, num_classes)
        for m in self.modules():
            if isinstance(m, _nn.Conv2d):
                _nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, _nn.BatchNorm2d):
                _nn.init.constant_(m.weight, 1)
                _nn.init.constant_(m.bias, 0)

    def _make_layer(self, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes:
            downsample = _nn.Sequential(_nn.Conv2d(self.inplanes, planes, 1, stride, bias=False),
                                        _nn.BatchNorm2d(planes))
        layers = [BasicBlock(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes
        layers += [BasicBlock(planes, planes) for _ in range(1, blocks)]
        return _nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(self.avgpool(x).flatten(1))


def resnet18(weights=None, pretrained=False, progress=True, num_classes=1000, **kwargs):
    if weights is not None or pretrained:
        raise RuntimeError("torchvision stand-in: no pretrained weights (nothing is downloaded)")
    return ResNet([2, 2, 2, 2], num_classes=num_classes)
