"""A small CPU workload shaped like the original's Figure 7 ResNet-18 script (its overhead evaluation):
written for the original, it imports `traincheck.instrumentor.tracer` and turns the wrapper off for
set-up (module level and main_worker) and on for the epoch loop; after training it turns it off again
for a summary. Batch b of epoch e is step (e - 1) * (batches + 1) + 1 + b: the epoch loop and the batch
loop both count steps, as under the original."""
import argparse

import torch
import torch.nn as nn
import traincheck.instrumentor.tracer as tc_tracer
from torch.optim.lr_scheduler import StepLR

tc_tracer.DISABLE_WRAPPER = True
IDENTITY = torch.eye(4)  # module-level set-up: not recorded

parser = argparse.ArgumentParser(description="Figure 7 style workload")
parser.add_argument("--epochs", default=2, type=int)
parser.add_argument("--batches", default=3, type=int)


def main():
    args = parser.parse_args()
    main_worker(args)


def main_worker(args):
    tc_tracer.DISABLE_WRAPPER = True
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), 0.1, momentum=0.9)
    scheduler = StepLR(optimizer, step_size=1, gamma=0.5)
    train_loader = [(torch.randn(4, 8), torch.randint(0, 4, (4,))) for _ in range(args.batches)]
    val_loader = [(torch.randn(4, 8), torch.randint(0, 4, (4,))) for _ in range(2)]

    for epoch in range(args.epochs):
        tc_tracer.DISABLE_WRAPPER = False
        train(train_loader, model, criterion, optimizer, epoch)
        acc = validate(val_loader, model, criterion)
        scheduler.step()
        print(f"epoch {epoch} acc {acc:.2f}")

    tc_tracer.DISABLE_WRAPPER = True
    summary = torch.stack([p.detach().abs().sum() for p in model.parameters()])
    print(f"parameter mass {summary.sum().item():.4f}")


def train(train_loader, model, criterion, optimizer, epoch):
    model.train()
    for i, (images, target) in enumerate(train_loader):
        output = model(images)
        loss = criterion(output, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def validate(val_loader, model, criterion):
    def run_validate(loader):
        correct = 0
        with torch.no_grad():
            for i, (images, target) in enumerate(loader):
                output = model(images)
                loss = criterion(output, target)
                correct += (output.argmax(1) == target).sum().item()
        return correct

    model.eval()
    return run_validate(val_loader) / (4 * len(val_loader))


if __name__ == "__main__":
    main()
