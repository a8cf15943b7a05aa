"""A LightningModule CNN classifier with training_step and validation_step (self.log of the validation
accuracy), trained by lightning's Trainer with accumulate_grad_batches=2, gradient_clip_val=0.5 and a
validation run every few batches; SGD with a StepLR stepped per epoch."""
import argparse

import lightning.pytorch as pl
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class LitCNN(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                                   nn.Flatten(), nn.Linear(8 * 5 * 5, 3))
        self.val_acc = None

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.cross_entropy(self.model(x), y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        acc = (self.model(x).argmax(1) == y).float().mean()
        self.log("val_acc", acc)
        self.val_acc = acc.item()

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=0.05, momentum=0.9)
        return [optimizer], [torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)]


def images(n, gen):
    y = torch.randint(0, 3, (n,), generator=gen)
    x = torch.randn(n, 1, 10, 10, generator=gen) * 0.5
    x[:, 0, :, :] += (y.float() - 1).view(-1, 1, 1)  # the class shifts the brightness
    return TensorDataset(x, y)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()

    pl.seed_everything(args.seed, verbose=False)
    gen = torch.Generator().manual_seed(args.seed)
    train_loader = DataLoader(images(96, gen), batch_size=12, shuffle=True, generator=gen)
    val_loader = DataLoader(images(24, gen), batch_size=12)
    model = LitCNN()
    trainer = pl.Trainer(max_epochs=args.epochs, accelerator="cpu", devices=1, accumulate_grad_batches=2,
                         gradient_clip_val=0.5, val_check_interval=4, num_sanity_val_steps=0, logger=False,
                         enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(model, train_loader, val_loader)
    print(f"FINAL val_acc={model.val_acc:.4f} steps={trainer.global_step}")


if __name__ == "__main__":
    main()
