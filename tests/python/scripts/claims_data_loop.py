"""A data-parallel training loop (one rank, gloo) with the bugs the claims of what runs between optimizer steps
tell (docs/relations.md §ParameterGetsGradientsRelation, §EvalModeInValidationRelation,
§ForwardThroughWrapperRelation, §SamplerEpochAdvancesRelation): `--bug` picks one; `none` is the correct
program (a shuffling DistributedSampler whose epoch is set, a validation pass in eval mode after each epoch,
every forward through the DDP wrapper, the encoder frozen for the first epoch, after the optimizer was
built, and unfrozen for the others, the training set's accuracy measured after each epoch)."""
import argparse
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

BUGS = ["none", "no_set_epoch", "validate_in_train_mode", "detached_encoder", "forward_bypasses_ddp",
        "encoder_left_frozen"]
parser = argparse.ArgumentParser()
parser.add_argument("--bug", choices=BUGS, default="none")
args = parser.parse_args()


class Net(nn.Module):
    def __init__(self, detach: bool):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(8, 16), nn.ReLU())
        self.dropout = nn.Dropout(0.2)
        self.head = nn.Linear(16, 2)
        self.detach = detach

    def forward(self, x):
        h = self.encoder(x)
        if self.detach:
            h = h.detach()
        return self.head(self.dropout(h))


def main():
    rendezvous = os.path.join(tempfile.mkdtemp(), "pg")
    dist.init_process_group("gloo", init_method=f"file://{rendezvous}", rank=0, world_size=1)
    torch.manual_seed(0)
    # find_unused_parameters: DDP does not stop a forward that leaves parameters without gradients
    model = nn.parallel.DistributedDataParallel(Net(args.bug == "detached_encoder"), find_unused_parameters=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    data = TensorDataset(torch.randn(64, 8), torch.randint(0, 2, (64,)))
    sampler = DistributedSampler(data, num_replicas=1, rank=0, shuffle=True, seed=0)
    loader = DataLoader(data, batch_size=16, sampler=sampler)
    val_loader = DataLoader(TensorDataset(torch.randn(32, 8), torch.randint(0, 2, (32,))), batch_size=16)
    for epoch in range(3):
        if args.bug != "no_set_epoch":
            sampler.set_epoch(epoch)
        warming_up = epoch == 0 or args.bug == "encoder_left_frozen"
        for p in model.module.encoder.parameters():
            p.requires_grad_(not warming_up)
        model.train()
        for x, y in loader:
            optimizer.zero_grad()
            net = model.module if args.bug == "forward_bypasses_ddp" else model
            loss = nn.functional.cross_entropy(net(x), y)
            loss.backward()
            optimizer.step()
        if args.bug != "validate_in_train_mode":
            model.eval()
        correct = 0
        with torch.no_grad():
            for x, y in val_loader:
                logits = model(x)
                predicted = logits.argmax(dim=1)
                correct += int((predicted == y).sum())
        with torch.no_grad():  # the training set's accuracy: another pass of its sampler, in the same epoch
            train_correct = sum(int((model(x).argmax(dim=1) == y).sum()) for x, y in loader)
        print(f"epoch {epoch} loss {loss.item():.6f} val_acc {correct / 32:.4f} train_acc {train_correct / 64:.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
