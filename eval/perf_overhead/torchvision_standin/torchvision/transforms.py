"""transforms.Compose, ToTensor and Normalize, on the uint8 tensors the stand-in datasets return (where
torchvision's datasets return PIL images). Other transforms are only reached by the scripts' ImageFolder
branch, which the stand-in does not provide: naming one fails with a message."""
import torch


class Compose:
    def __init__(self, transforms):
        self.transforms = list(transforms)

    def __call__(self, value):
        for transform in self.transforms:
            value = transform(value)
        return value


class ToTensor:
    """uint8 HxW or CxHxW -> float CxHxW in [0, 1], as torchvision's ToTensor does for a PIL image."""

    def __call__(self, image):
        if image.dim() == 2:
            image = image.unsqueeze(0)
        return image.to(torch.float32).div_(255)


class Normalize:
    def __init__(self, mean, std):
        self.mean = torch.tensor(mean, dtype=torch.float32).view(-1, 1, 1)
        self.std = torch.tensor(std, dtype=torch.float32).view(-1, 1, 1)

    def __call__(self, tensor):
        return (tensor - self.mean) / self.std


def __getattr__(name):
    raise AttributeError(f"torchvision stand-in (eval/perf_overhead/torchvision_standin): transforms.{name} "
                         "is not provided; only Compose, ToTensor and Normalize are")
