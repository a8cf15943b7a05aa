"""Hugging Face Trainer pre-training a GPT-2 language model from a small GPT2Config: gradient accumulation
(2 steps), cosine schedule with warmup, max_grad_norm clipping, AdamW (the Trainer's default), a data
collator for causal LM (labels = inputs, padding masked); then model.generate() greedily."""
import argparse

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments


class Arithmetic(torch.utils.data.Dataset):
    """Sequences of an arithmetic progression modulo the vocabulary, variable length."""

    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.items = []
        for _ in range(n):
            start, stride = torch.randint(1, 40, (2,), generator=g).tolist()
            length = int(torch.randint(8, 17, (1,), generator=g))
            self.items.append((torch.arange(length) * (stride % 5 + 1) + start) % 40 + 1)

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return {"input_ids": self.items[i]}


def collate(features):
    longest = max(len(f["input_ids"]) for f in features)
    ids = torch.zeros(len(features), longest, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for row, f in enumerate(features):
        ids[row, :len(f["input_ids"])] = f["input_ids"]
        mask[row, :len(f["input_ids"])] = 1
    labels = ids.masked_fill(mask == 0, -100)
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-steps", type=int, default=6)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    config = GPT2Config(vocab_size=48, n_positions=32, n_embd=32, n_layer=2, n_head=2, pad_token_id=0,
                        bos_token_id=1, eos_token_id=1)
    model = GPT2LMHeadModel(config)
    training_args = TrainingArguments(
        output_dir="gpt2_out", max_steps=args.max_steps, per_device_train_batch_size=8,
        gradient_accumulation_steps=2, learning_rate=1e-3, lr_scheduler_type="cosine", warmup_steps=2,
        max_grad_norm=1.0, logging_steps=2, save_strategy="no", report_to=[], use_cpu=True, disable_tqdm=True,
        seed=args.seed)
    trainer = Trainer(model=model, args=training_args, train_dataset=Arithmetic(128, args.seed), data_collator=collate)
    result = trainer.train()
    model.eval()
    out = model.generate(torch.tensor([[3, 5, 7]]), max_new_tokens=5, do_sample=False, pad_token_id=0)
    print(f"FINAL train_loss={result.training_loss:.6f} generated={out[0].tolist()}")


if __name__ == "__main__":
    main()
