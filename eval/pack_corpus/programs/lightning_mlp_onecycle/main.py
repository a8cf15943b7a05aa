"""A LightningModule (training_step, configure_optimizers returning an optimizer and a per-step OneCycleLR
scheduler) trained by lightning's Trainer on the CPU for a fixed number of steps; seed_everything; no
logger, no checkpointing."""
import argparse

import lightning.pytorch as pl
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Regressor(pl.LightningModule):
    def __init__(self, max_steps, lr=1e-2):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, 1))
        self.last_loss = None

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.mse_loss(self(x), y)
        self.last_loss = loss.item()
        return loss

    def configure_optimizers(self):
        optimizer = torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
        scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=self.hparams.lr,
                                                        total_steps=self.hparams.max_steps)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-steps", type=int, default=12)
    args = parser.parse_args()

    pl.seed_everything(args.seed, verbose=False)
    x = torch.randn(192, 6)
    y = x[:, :3].sum(1, keepdim=True) - x[:, 3:].prod(1, keepdim=True)
    loader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True)

    model = Regressor(max_steps=args.max_steps)
    trainer = pl.Trainer(max_steps=args.max_steps, accelerator="cpu", devices=1, logger=False,
                         enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(model, loader)
    print(f"FINAL loss={model.last_loss:.6f} steps={trainer.global_step}")


if __name__ == "__main__":
    main()
