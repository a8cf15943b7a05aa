"""transformers' Seq2SeqTrainer fine-tunes a tiny BART (built from its config, no download) to reverse
sequences of variable length, with evaluation by generation (predict_with_generate) every two steps and
a metric on the generated tokens. The script pads its own batches (no tokenizer): inputs with the pad
token, labels with -100, which the loss ignores. A correct program.

--bug: the labels are padded with the pad token as the inputs are (one collate function for both), so
the cross-entropy also trains the model to predict padding. Nothing fails; the model learns a bit less.
"""
import argparse

import numpy as np
import torch
from transformers import BartConfig, BartForConditionalGeneration, Seq2SeqTrainer, Seq2SeqTrainingArguments

VOCAB, PAD, BOS, EOS = 32, 0, 1, 2
seen = {"labels": 0, "ignored": 0}


class Reversal(torch.utils.data.Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.items = []
        for _ in range(n):
            length = int(torch.randint(3, 9, (1,), generator=g))
            x = torch.randint(3, VOCAB, (length,), generator=g)
            self.items.append((x, torch.cat([x.flip(0), torch.tensor([EOS])])))

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        x, y = self.items[i]
        return {"input_ids": x, "labels": y}


def collate(bug):
    def pad(seqs, value):
        out = torch.full((len(seqs), max(len(s) for s in seqs)), value, dtype=torch.long)
        for i, s in enumerate(seqs):
            out[i, : len(s)] = s
        return out

    def batch(features):
        input_ids = pad([f["input_ids"] for f in features], PAD)
        labels = pad([f["labels"] for f in features], PAD if bug else -100)
        seen["labels"] += labels.numel()
        seen["ignored"] += int((labels == -100).sum())
        return {"input_ids": input_ids, "attention_mask": (input_ids != PAD).long(), "labels": labels}

    return batch


def metrics(pred):
    preds, labels = pred.predictions, pred.label_ids
    labels = np.where(labels == -100, PAD, labels)
    width = min(preds.shape[1], labels.shape[1])
    return {"token_acc": float((preds[:, :width] == labels[:, :width]).mean())}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bug", action="store_true")
    parser.add_argument("--steps", type=int, default=6)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    config = BartConfig(vocab_size=VOCAB, d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                        decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=32,
                        pad_token_id=PAD, bos_token_id=BOS, eos_token_id=EOS, decoder_start_token_id=EOS,
                        forced_eos_token_id=None)
    model = BartForConditionalGeneration(config)
    model.generation_config.max_new_tokens = 10
    targs = Seq2SeqTrainingArguments(
        output_dir="seq2seq_out", max_steps=args.steps, per_device_train_batch_size=8, per_device_eval_batch_size=8,
        learning_rate=3e-3, eval_strategy="steps", eval_steps=2, logging_steps=1, save_strategy="no",
        predict_with_generate=True, use_cpu=True, report_to="none", seed=args.seed, data_seed=args.seed,
        disable_tqdm=True)
    trainer = Seq2SeqTrainer(model=model, args=targs, train_dataset=Reversal(96, args.seed),
                             eval_dataset=Reversal(16, args.seed + 100), data_collator=collate(args.bug),
                             compute_metrics=metrics)
    trainer.train()
    print(f"SYMPTOM ignored_label_fraction={seen['ignored'] / max(seen['labels'], 1):.4f}")


if __name__ == "__main__":
    main()
