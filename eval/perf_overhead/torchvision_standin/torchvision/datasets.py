"""datasets.MNIST and datasets.FakeData with synthetic data of the real shapes; nothing is downloaded.

MNIST: 60,000 (train) or 10,000 (test) uint8 28x28 images and labels 0-9, drawn from a seeded generator
and held in memory, as torchvision holds the real ones. FakeData: torchvision's class, one uint8 image per
index drawn from a generator seeded with the index (torchvision draws a float image and converts it to a
PIL image). `TC_STANDIN_MAX_SAMPLES` in the environment caps every dataset's length (the runner's CPU
default, README.md)."""
import os

import torch

MAX_SAMPLES_ENV = "TC_STANDIN_MAX_SAMPLES"


def _length(real_length):
    cap = os.environ.get(MAX_SAMPLES_ENV)
    return min(real_length, int(cap)) if cap else real_length


class MNIST(torch.utils.data.Dataset):
    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        self.root, self.train = root, train
        self.transform, self.target_transform = transform, target_transform
        generator = torch.Generator().manual_seed(0 if train else 1)
        n = _length(60000 if train else 10000)
        self.data = torch.randint(0, 256, (n, 28, 28), dtype=torch.uint8, generator=generator)
        self.targets = torch.randint(0, 10, (n,), dtype=torch.int64, generator=generator)

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        image, target = self.data[index], int(self.targets[index])
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target


class FakeData(torch.utils.data.Dataset):
    def __init__(self, size=1000, image_size=(3, 224, 224), num_classes=10, transform=None,
                 target_transform=None, random_offset=0):
        self.size, self.image_size, self.num_classes = _length(size), tuple(image_size), num_classes
        self.transform, self.target_transform, self.random_offset = transform, target_transform, random_offset

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        if index >= len(self):
            raise IndexError(f"{type(self).__name__} index out of range")
        generator = torch.Generator().manual_seed(index + self.random_offset)
        image = torch.randint(0, 256, self.image_size, dtype=torch.uint8, generator=generator)
        target = int(torch.randint(0, self.num_classes, (1,), generator=generator))
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target


class ImageFolder:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("torchvision stand-in (eval/perf_overhead/torchvision_standin): ImageFolder needs "
                           "real images; run the script with --dummy (FakeData)")
