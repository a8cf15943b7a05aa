"""A tiny GPT-2 (built from its config, no download) fine-tuned on synthetic prompts that a processor turns
into token batches: a word-level fast tokenizer built in code (transformers' PreTrainedTokenizerFast
over a `tokenizers` WordLevel model) behind a small processor class, as multimodal processors wrap one.

--bug: the processor formats a list of prompts into one templated text before tokenising (the "processor
returns one row for many prompts" reports), so each batch of 8 prompts becomes a single row: the model
trains on one long sequence per step, silently.
"""
import argparse

import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

WORDS = ["the", "a", "cat", "dog", "bird", "sees", "likes", "chases", "red", "big", "small", "fast", "slow",
         "tree", "house", "ball", "and", "then"]


class PromptProcessor:
    """Formats prompts with a template and tokenises them into a padded batch (one row per prompt)."""

    def __init__(self, tokenizer, bug=False):
        self.tokenizer = tokenizer
        self.bug = bug

    def __call__(self, prompts):
        texts = [f"[BOS] {p} [EOS]" for p in prompts]
        if self.bug:
            texts = " ".join(texts)  # the list collapses into one text: one row
        return self.tokenizer(texts, padding=True, return_tensors="pt")


def build_tokenizer():
    vocab = {w: i for i, w in enumerate(["[PAD]", "[UNK]", "[BOS]", "[EOS]", *WORDS])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]",
                                   bos_token="[BOS]", eos_token="[EOS]")


def random_prompts(n, gen):
    idx = torch.randint(0, len(WORDS), (n, 5), generator=gen).tolist()
    return [" ".join(WORDS[i] for i in row) for row in idx]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bug", action="store_true")
    parser.add_argument("--steps", type=int, default=12)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    tokenizer = build_tokenizer()
    processor = PromptProcessor(tokenizer, bug=args.bug)
    config = GPT2Config(vocab_size=len(tokenizer), n_positions=128, n_embd=32, n_layer=2, n_head=2,
                        bos_token_id=2, eos_token_id=3, pad_token_id=0)
    model = GPT2LMHeadModel(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)

    rows = []
    model.train()
    for step in range(args.steps):
        batch = processor(random_prompts(8, gen))
        rows.append(batch["input_ids"].shape[0])
        labels = batch["input_ids"].masked_fill(batch["attention_mask"] == 0, -100)
        loss = model(**batch, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 6 == 0:
            print(f"step {step}: loss {loss.item():.4f}")
    print(f"SYMPTOM rows_per_batch={max(rows)} prompts_per_batch=8")


if __name__ == "__main__":
    main()
