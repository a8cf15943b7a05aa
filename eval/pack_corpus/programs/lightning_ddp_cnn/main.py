"""A LightningModule CNN (conv, batch norm, max-pool, global average pool) trained by lightning's Trainer
with strategy="ddp" on 2 CPU ranks launched by torchrun (Lightning reads the torchrun environment and adds
the distributed samplers itself); AdamW with a per-epoch cosine schedule, a validation pass after each
epoch with metrics synchronised over ranks (sync_dist), no logger, no checkpointing."""
import argparse

import lightning as L
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def make_images(n):
    """Noisy 1x16x16 images with a bright 4x4 square in one of four quadrants; the label is the quadrant."""
    labels = torch.randint(0, 4, (n,))
    images = 0.3 * torch.randn(n, 1, 16, 16)
    for i, q in enumerate(labels.tolist()):
        r, c = 8 * (q // 2) + torch.randint(0, 5, (2,))
        images[i, 0, r:r + 4, c:c + 4] += 1.0
    return images, labels


class QuadrantCNN(L.LightningModule):
    def __init__(self, lr=3e-3, weight_decay=1e-2, epochs=2):
        super().__init__()
        self.save_hyperparameters()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.head = nn.Linear(16 * 4 * 4, 4)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self.log("train_loss", loss, on_step=False, on_epoch=True, sync_dist=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        self.log("val_loss", F.cross_entropy(logits, y), sync_dist=True)
        self.log("val_acc", (logits.argmax(1) == y).float().mean(), sync_dist=True)

    def configure_optimizers(self):
        optimizer = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr,
                                      weight_decay=self.hparams.weight_decay)
        scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=self.hparams.epochs)
        return [optimizer], [scheduler]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=16)
    args = parser.parse_args()

    L.seed_everything(args.seed, verbose=False)
    train_x, train_y = make_images(256)
    val_x, val_y = make_images(64)
    train_loader = DataLoader(TensorDataset(train_x, train_y), batch_size=args.batch_size, shuffle=True)
    val_loader = DataLoader(TensorDataset(val_x, val_y), batch_size=32)

    model = QuadrantCNN(epochs=args.epochs)
    trainer = L.Trainer(accelerator="cpu", devices=2, strategy="ddp", max_epochs=args.epochs,
                        enable_progress_bar=False, enable_checkpointing=False, logger=False,
                        enable_model_summary=False)
    trainer.fit(model, train_loader, val_loader)

    metrics = trainer.callback_metrics
    if trainer.is_global_zero:
        print(f"FINAL train_loss={metrics['train_loss'].item():.6f} val_loss={metrics['val_loss'].item():.6f} "
              f"val_acc={metrics['val_acc'].item():.4f} steps={trainer.global_step}")


if __name__ == "__main__":
    main()
