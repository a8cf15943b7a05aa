"""Two DDP ranks (torchrun, gloo, CPU) fine-tune a tiny BERT classifier (built from its config, no
download) with a Trainer subclass of the script's own: a weighted loss (compute_loss) and AdamW param
groups without weight decay for biases and LayerNorm weights (create_optimizer), the idiom of many
fine-tuning scripts. Evaluation every two steps, gradient accumulation, a warmup schedule, checkpoints
and two DataLoader workers, as a user's run has them. A correct program.

--bug: the no-decay names are written "layer_norm.weight", which no parameter of BERT is called (its
are "LayerNorm.weight"), and the decay group excludes "LayerNorm" by its own spelling: the LayerNorm
weights are in neither group, so no optimizer step ever updates them. Training runs, the loss falls.
"""
import argparse
import os
import tempfile

import numpy as np
import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

VOCAB = 64


class Pairs(torch.utils.data.Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randint(1, VOCAB, (n, 16), generator=g)
        self.y = (self.x[:, 0] > VOCAB // 2).long()

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return {"input_ids": self.x[i], "attention_mask": torch.ones(16, dtype=torch.long), "labels": self.y[i]}


class FineTuner(Trainer):
    def __init__(self, *args, no_decay, **kwargs):
        super().__init__(*args, **kwargs)
        self.no_decay = no_decay

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        loss = torch.nn.functional.cross_entropy(outputs.logits, labels, weight=torch.tensor([1.0, 2.0]))
        return (loss, outputs) if return_outputs else loss

    def create_optimizer(self):
        named = list(self.model.named_parameters())
        groups = [
            {"params": [p for n, p in named if "bias" not in n and "LayerNorm" not in n], "weight_decay": 0.01},
            {"params": [p for n, p in named if any(nd in n for nd in self.no_decay)], "weight_decay": 0.0},
        ]
        self.optimizer = torch.optim.AdamW(groups, lr=self.args.learning_rate)
        return self.optimizer


def metrics(p):
    return {"accuracy": float((np.argmax(p.predictions, -1) == p.label_ids).mean())}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bug", action="store_true")
    parser.add_argument("--steps", type=int, default=6)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    config = BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=32, num_labels=2)
    model = BertForSequenceClassification(config)
    initial = {n: p.detach().clone() for n, p in model.named_parameters() if "LayerNorm.weight" in n}
    no_decay = ["bias", "layer_norm.weight"] if args.bug else ["bias", "LayerNorm.weight"]
    with tempfile.TemporaryDirectory() as out:
        targs = TrainingArguments(
            output_dir=out, max_steps=args.steps, per_device_train_batch_size=8, per_device_eval_batch_size=16,
            gradient_accumulation_steps=2, learning_rate=5e-3, warmup_steps=2, lr_scheduler_type="linear",
            eval_strategy="steps", eval_steps=2, logging_steps=1, save_strategy="steps", save_steps=3,
            use_cpu=True, ddp_backend="gloo", report_to="none", seed=args.seed, data_seed=args.seed,
            dataloader_num_workers=2, disable_tqdm=True)
        trainer = FineTuner(model=model, args=targs, train_dataset=Pairs(256, args.seed),
                            eval_dataset=Pairs(64, args.seed + 100), compute_metrics=metrics, no_decay=no_decay)
        trainer.train()
    moved = max((p.detach() - initial[n]).abs().max().item() for n, p in model.named_parameters() if n in initial)
    if int(os.environ.get("RANK", "0")) == 0:
        print(f"SYMPTOM layernorm_weight_max_change={moved:.6f}")


if __name__ == "__main__":
    main()
