"""A tiny GPT-2 built from its config (no download) generating a few tokens; `--compile` compiles its
forward first. Prints the generated tokens as one JSON line. The script imports transformers only after
it starts, so its modeling and generation modules load lazily, after collection has started."""
import argparse
import json

import torch


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--compile", action="store_true")
    args = parser.parse_args()
    from transformers import GPT2Config, GPT2LMHeadModel  # _LazyModule: modeling_gpt2 loads here

    torch.manual_seed(0)
    config = GPT2Config(n_layer=1, n_head=2, n_embd=16, vocab_size=64, n_positions=32, bos_token_id=0, eos_token_id=0)
    model = GPT2LMHeadModel(config).eval()
    prompt = torch.tensor([[1, 2, 3, 4]])
    if args.compile:
        compiled = torch.compile(model, backend="eager")
        with torch.no_grad():
            logits = compiled(prompt).logits
        print(json.dumps({"compiled_logits_sum": round(float(logits.sum()), 4)}))
    out = model.generate(prompt, max_new_tokens=3, do_sample=False, pad_token_id=0)
    print(json.dumps({"generated": out.tolist()}))


if __name__ == "__main__":
    main()
