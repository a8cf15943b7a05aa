"""A stand-in for torchvision, for the paper's own MNIST and ResNet-18 scripts (../README.md): torchvision
is not installed here and its datasets cannot be downloaded. It provides exactly what those scripts use:
`datasets.MNIST` and `datasets.FakeData` with synthetic data of the real shapes, `transforms.Compose`,
`ToTensor` and `Normalize`, and `models.resnet18` (torchvision's architecture). The runner puts its
parent folder first on the run's PYTHONPATH; it is never installed.
"""
from . import datasets, models, transforms  # noqa: F401

__version__ = "0.0+standin"
