"""DDP transformer-encoder sequence classifier on 2 CPU ranks (gloo): token + learned position embeddings,
an nn.TransformerEncoder and mean pooling, the forward pass and loss under
torch.autocast("cpu", dtype=torch.bfloat16), AdamW with weight decay, a CosineAnnealingLR stepped every
batch, and gradient-norm clipping between backward and step. The task is to tell whether a sequence holds
more tokens from the lower half of the vocabulary than from the upper half; a DistributedSampler with
set_epoch shards the data."""
import argparse

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class EncoderClassifier(nn.Module):
    def __init__(self, vocab_size, max_len, d_model=32, nhead=4, num_layers=2, num_classes=2):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab_size, d_model)
        self.pos_emb = nn.Embedding(max_len, d_model)
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=64, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=num_layers)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, num_classes)

    def forward(self, tokens):
        positions = torch.arange(tokens.size(1), device=tokens.device)
        h = self.tok_emb(tokens) + self.pos_emb(positions)
        h = self.encoder(h)
        return self.head(self.norm(h.mean(dim=1)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--weight-decay", type=float, default=0.01)
    parser.add_argument("--max-grad-norm", type=float, default=1.0)
    parser.add_argument("--vocab-size", type=int, default=32)
    parser.add_argument("--seq-len", type=int, default=12)
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank, world_size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(args.seed)

    tokens = torch.randint(0, args.vocab_size, (320, args.seq_len))
    labels = ((tokens < args.vocab_size // 2).sum(1) > args.seq_len // 2).long()
    dataset = TensorDataset(tokens, labels)
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=True, seed=args.seed)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler, drop_last=True)

    model = DDP(EncoderClassifier(args.vocab_size, args.seq_len))
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs * len(loader))

    step = 0
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        model.train()
        stats = torch.zeros(3)  # summed loss, correct predictions, examples
        for xb, yb in loader:
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast("cpu", dtype=torch.bfloat16):
                logits = model(xb)
                loss = F.cross_entropy(logits, yb)
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
            optimizer.step()
            scheduler.step()
            step += 1
            stats += torch.tensor([loss.item() * len(yb), (logits.argmax(1) == yb).sum().item(), len(yb)])
            if rank == 0 and step % 5 == 0:
                print(f"step {step}: loss {loss.item():.4f}  grad norm {grad_norm.item():.3f}  "
                      f"lr {scheduler.get_last_lr()[0]:.2e}")
        dist.all_reduce(stats, op=dist.ReduceOp.SUM)
        train_loss = (stats[0] / stats[2]).item()
        train_acc = (stats[1] / stats[2]).item()
        if rank == 0:
            print(f"epoch {epoch}: train loss {train_loss:.4f}  train acc {train_acc:.3f}")

    if rank == 0:
        print(f"FINAL train_loss={train_loss:.6f} train_acc={train_acc:.4f} steps={step}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
