"""A tiny GPT-2 (built from its config, no download) trained on synthetic counting sequences, with greedy
`model.generate(..., max_new_tokens=N)` samples every few steps and after training: transformers'
generate, not a hand-written one (the `generate_overruns_max_new_tokens` case has that).

--bug: the generation length is prepared one token too long (as transformers' off-by-one reports
describe: `_prepare_generated_length` leaves max_length at prompt + max_new_tokens + 1), so without an
EOS every sample has max_new_tokens + 1 new tokens.
"""
import argparse

import torch
from transformers import GPT2Config, GPT2LMHeadModel
from transformers.generation.utils import GenerationMixin

VOCAB = 32


def one_token_too_long(prepare):
    def prepare_generated_length(self, generation_config, *args, **kwargs):
        generation_config = prepare(self, generation_config, *args, **kwargs)
        generation_config.max_length += 1
        return generation_config

    return prepare_generated_length


def get_batch(batch_size, seq_len, gen):
    start = torch.randint(1, VOCAB, (batch_size, 1), generator=gen)
    seq = (start + torch.arange(seq_len + 1)) % (VOCAB - 1) + 1  # never 0 (the EOS)
    return seq[:, :-1], seq[:, 1:]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bug", action="store_true")
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--sample-every", type=int, default=6)
    parser.add_argument("--max-new-tokens", type=int, default=6)
    args = parser.parse_args()

    if args.bug:
        GenerationMixin._prepare_generated_length = one_token_too_long(GenerationMixin._prepare_generated_length)
    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    config = GPT2Config(vocab_size=VOCAB, n_positions=64, n_embd=32, n_layer=2, n_head=2,
                        bos_token_id=0, eos_token_id=0, pad_token_id=0)
    model = GPT2LMHeadModel(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    prompts = torch.tensor([[1, 2, 3], [7, 8, 9], [20, 21, 22]])

    new_tokens = []
    model.train()
    for step in range(args.steps):
        if step > 0 and step % args.sample_every == 0:
            model.eval()
            with torch.no_grad():
                out = model.generate(prompts, attention_mask=torch.ones_like(prompts), max_new_tokens=args.max_new_tokens,
                                     do_sample=False)
            new_tokens.append(out.shape[1] - prompts.shape[1])
            model.train()
        x, _ = get_batch(16, 12, gen)
        loss = model(input_ids=x, labels=x).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 8 == 0:
            print(f"step {step}: loss {loss.item():.4f}")

    model.eval()
    with torch.no_grad():
        out = model.generate(prompts, attention_mask=torch.ones_like(prompts), max_new_tokens=args.max_new_tokens,
                                     do_sample=False)
    new_tokens.append(out.shape[1] - prompts.shape[1])
    print(f"SYMPTOM max_generated_new_tokens={max(new_tokens)} max_new_tokens={args.max_new_tokens}")


if __name__ == "__main__":
    main()
