"""Hugging Face Trainer fine-tuning a BERT sequence classifier built from a small BertConfig (no
download): a torch Dataset of dicts, evaluation after each epoch with compute_metrics (accuracy),
linear learning-rate decay with warmup, weight decay; CPU only, no reporting integrations."""
import argparse

import numpy as np
import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments


class PairDataset(torch.utils.data.Dataset):
    """Token sequences whose label says whether token 5 occurs more often than token 6."""

    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(5, 60, (n, 16), generator=g)
        self.ids[:, 0] = 2  # [CLS]
        self.labels = ((self.ids == 5).sum(1) > (self.ids == 6).sum(1)).long()

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "attention_mask": torch.ones(16, dtype=torch.long), "labels": self.labels[i]}


def compute_metrics(eval_pred):
    logits, labels = eval_pred
    return {"accuracy": float((np.argmax(logits, axis=-1) == labels).mean())}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    config = BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=32, num_labels=2)
    model = BertForSequenceClassification(config)
    training_args = TrainingArguments(
        output_dir="bert_out", num_train_epochs=args.epochs, per_device_train_batch_size=16,
        per_device_eval_batch_size=32, learning_rate=5e-4, weight_decay=0.01, warmup_steps=2,
        eval_strategy="epoch", save_strategy="no", logging_steps=4, report_to=[], use_cpu=True,
        disable_tqdm=True, seed=args.seed)
    trainer = Trainer(model=model, args=training_args, train_dataset=PairDataset(96, args.seed),
                      eval_dataset=PairDataset(32, args.seed + 1000), compute_metrics=compute_metrics)
    trainer.train()
    metrics = trainer.evaluate()
    print(f"FINAL eval_loss={metrics['eval_loss']:.6f} eval_accuracy={metrics['eval_accuracy']:.4f}")


if __name__ == "__main__":
    main()
