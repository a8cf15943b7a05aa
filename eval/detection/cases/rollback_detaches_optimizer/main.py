"""MLP regression with a divergence guard: when a batch gives a non-finite loss, the batch is skipped
(no backward) and the model is rolled back to the last good snapshot of its weights.

--bug: the rollback uses load_state_dict(..., assign=True), which swaps new Parameter objects into the
model instead of copying into the existing ones. The optimizer still holds the old parameters, so after
the first skipped step it updates tensors the model no longer uses: training silently stops.
"""
import argparse
import copy

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def build_model():
    return nn.Sequential(
        nn.Linear(12, 64), nn.GELU(),
        nn.Linear(64, 64), nn.GELU(),
        nn.Linear(64, 2),
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bug", action="store_true")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--snapshot-every", type=int, default=4)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    x = torch.randn(256, 12)
    w = torch.randn(12, 2) / 3
    y = torch.sin(x @ w) + 0.5 * (x @ w)
    x[200, 5] = float("nan")  # one corrupted record in the data file (lands in the 7th batch)
    train_loader = DataLoader(TensorDataset(x, y), batch_size=args.batch_size, shuffle=False)

    model = build_model()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    criterion = nn.MSELoss()

    snapshot = copy.deepcopy(model.state_dict())
    global_step = 0
    losses = []
    weights_at_first_skip = None
    for epoch in range(args.epochs):
        model.train()
        for xb, yb in train_loader:
            global_step += 1
            loss = criterion(model(xb), yb)
            if not torch.isfinite(loss):
                print(f"step {global_step}: non-finite loss, skipping batch and rolling back to the last snapshot")
                # assign=True reuses the snapshot tensors instead of copying them
                model.load_state_dict(snapshot, assign=args.bug)
                optimizer.zero_grad(set_to_none=True)
                if weights_at_first_skip is None:
                    weights_at_first_skip = model[0].weight.detach().clone()
                continue

            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            if global_step % args.snapshot_every == 0:
                snapshot = copy.deepcopy(model.state_dict())
        print(f"epoch {epoch}: last loss {losses[-1]:.4f}")

    change = (model[0].weight.detach() - weights_at_first_skip).abs().max().item()
    print(f"first loss {losses[0]:.4f}, last loss {sum(losses[-3:]) / 3:.4f}")
    print(f"SYMPTOM weight_change_after_first_skip={change:.6f}")


if __name__ == "__main__":
    main()
