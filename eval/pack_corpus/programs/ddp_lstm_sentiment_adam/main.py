"""DDP sentiment classifier on 2 CPU ranks (gloo): an embedding + LSTM + linear head over synthetic token
sequences whose label is whether "positive" tokens outnumber "negative" ones. Adam, a DistributedSampler
with set_epoch for training and an unshuffled one for validation, a validation pass per epoch under
torch.no_grad() between model.eval() and model.train(), loss and accuracy summed over ranks with all_reduce."""
import argparse

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class SentimentLSTM(nn.Module):
    def __init__(self, vocab_size, embed_dim, hidden_dim, num_classes=2):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_dim, padding_idx=0)
        self.lstm = nn.LSTM(embed_dim, hidden_dim, batch_first=True)
        self.head = nn.Linear(hidden_dim, num_classes)

    def forward(self, tokens):
        _, (h_n, _) = self.lstm(self.embedding(tokens))
        return self.head(h_n[-1])


def make_dataset(n, seq_len, vocab_size, generator):
    tokens = torch.randint(1, vocab_size, (n, seq_len), generator=generator)
    # tokens 1..9 carry positive sentiment, 10..18 negative; the rest are neutral
    positive = ((tokens >= 1) & (tokens <= 9)).sum(1)
    negative = ((tokens >= 10) & (tokens <= 18)).sum(1)
    labels = (positive > negative).long()
    return TensorDataset(tokens, labels)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=5e-3)
    parser.add_argument("--vocab-size", type=int, default=40)
    parser.add_argument("--seq-len", type=int, default=16)
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank, world_size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(args.seed)

    data_gen = torch.Generator().manual_seed(args.seed)
    train_set = make_dataset(384, args.seq_len, args.vocab_size, data_gen)
    val_set = make_dataset(128, args.seq_len, args.vocab_size, data_gen)
    train_sampler = DistributedSampler(train_set, num_replicas=world_size, rank=rank, shuffle=True,
                                       seed=args.seed)
    val_sampler = DistributedSampler(val_set, num_replicas=world_size, rank=rank, shuffle=False)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, sampler=train_sampler)
    val_loader = DataLoader(val_set, batch_size=64, sampler=val_sampler)

    model = DDP(SentimentLSTM(args.vocab_size, embed_dim=16, hidden_dim=32))
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    for epoch in range(args.epochs):
        train_sampler.set_epoch(epoch)
        model.train()
        train_stats = torch.zeros(2)
        for tokens, labels in train_loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(tokens), labels)
            loss.backward()
            optimizer.step()
            train_stats += torch.tensor([loss.item() * len(labels), len(labels)])

        model.eval()
        val_stats = torch.zeros(3)  # summed loss, correct predictions, examples
        with torch.no_grad():
            for tokens, labels in val_loader:
                logits = model(tokens)
                val_stats += torch.tensor([F.cross_entropy(logits, labels, reduction="sum").item(),
                                           (logits.argmax(1) == labels).sum().item(), len(labels)])
        model.train()

        dist.all_reduce(train_stats, op=dist.ReduceOp.SUM)
        dist.all_reduce(val_stats, op=dist.ReduceOp.SUM)
        train_loss = (train_stats[0] / train_stats[1]).item()
        val_loss = (val_stats[0] / val_stats[2]).item()
        val_acc = (val_stats[1] / val_stats[2]).item()
        if rank == 0:
            print(f"epoch {epoch}: train loss {train_loss:.4f}  val loss {val_loss:.4f}  val acc {val_acc:.3f}")

    if rank == 0:
        print(f"FINAL train_loss={train_loss:.6f} val_loss={val_loss:.6f} val_acc={val_acc:.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
