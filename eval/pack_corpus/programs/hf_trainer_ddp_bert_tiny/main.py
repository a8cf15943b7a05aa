"""Hugging Face Trainer launched with torchrun on 2 CPU ranks: the Trainer wraps a tiny
BertForSequenceClassification (built from a BertConfig, no download) in DistributedDataParallel over gloo
and shards the training set with a distributed sampler; a fixed number of optimizer steps with linear
decay after a short warmup, a single evaluation on a held-out set at the end (predictions gathered from
both ranks), no checkpoints, no logging. The classifier's loss is a per-batch mean that DDP averages over
ranks, so average_tokens_across_devices is turned off."""
import argparse
import shutil

import numpy as np
import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

SEQ_LEN = 12
NUM_LABELS = 3


class KeywordDataset(torch.utils.data.Dataset):
    """Random background tokens with one of three keyword tokens (10, 11, 12) planted three times; the label
    is the keyword."""

    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.labels = torch.randint(0, NUM_LABELS, (n,), generator=g)
        self.ids = torch.randint(13, 32, (n, SEQ_LEN), generator=g)
        positions = torch.rand(n, SEQ_LEN - 1, generator=g).argsort(1)[:, :3] + 1
        self.ids.scatter_(1, positions, (10 + self.labels).unsqueeze(1).expand(-1, 3))
        self.ids[:, 0] = 2  # [CLS]

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "attention_mask": torch.ones(SEQ_LEN, dtype=torch.long),
                "labels": self.labels[i]}


def compute_metrics(eval_pred):
    logits, labels = eval_pred
    return {"accuracy": float((np.argmax(logits, axis=-1) == labels).mean())}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-steps", type=int, default=12)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--output-dir", default="bert_ddp_out")
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    config = BertConfig(vocab_size=32, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=SEQ_LEN, num_labels=NUM_LABELS)
    model = BertForSequenceClassification(config)

    training_args = TrainingArguments(
        output_dir=args.output_dir, max_steps=args.max_steps, per_device_train_batch_size=8,
        per_device_eval_batch_size=16, learning_rate=args.lr, warmup_steps=2, weight_decay=0.01,
        use_cpu=True, ddp_backend="gloo", ddp_find_unused_parameters=False, report_to="none",
        save_strategy="no", eval_strategy="no", logging_strategy="no", disable_tqdm=True,
        dataloader_num_workers=0, average_tokens_across_devices=False, seed=args.seed, data_seed=args.seed)
    trainer = Trainer(model=model, args=training_args, train_dataset=KeywordDataset(256, args.seed),
                      eval_dataset=KeywordDataset(64, args.seed + 1), compute_metrics=compute_metrics)
    train_result = trainer.train()
    metrics = trainer.evaluate()

    if trainer.is_world_process_zero():
        shutil.rmtree(args.output_dir, ignore_errors=True)
        print(f"FINAL train_loss={train_result.training_loss:.6f} eval_loss={metrics['eval_loss']:.6f} "
              f"eval_accuracy={metrics['eval_accuracy']:.4f} steps={train_result.global_step}")


if __name__ == "__main__":
    main()
