"""A small LightningModule trained with Trainer(max_steps=...) on CPU with synthetic data."""
import argparse
import json

import lightning.pytorch as pl
import torch

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=6)
parser.add_argument("--result", default="result.json")
args = parser.parse_args()


class Regressor(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
        self.losses = []

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.net(x), y)
        self.losses.append(loss.item())
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", torch.nn.functional.mse_loss(self.net(x), y))

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-2)


def loader(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 8, generator=g)
    y = x.sum(dim=1, keepdim=True)
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=8)


pl.seed_everything(0)
model = Regressor()
trainer = pl.Trainer(max_steps=args.steps, accelerator="cpu", devices=1, val_check_interval=3, num_sanity_val_steps=1,
                     limit_val_batches=2, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                     enable_model_summary=False)
trainer.fit(model, loader(64, 1), loader(16, 2))
json.dump({"losses": model.losses, "global_step": trainer.global_step}, open(args.result, "w"))
