"""A tiny GPT-2 (built from its config, no download) whose projection weights the script re-initialises
with its own scheme (normal, std 0.1, as scripts porting a paper's init do), then trains on synthetic
sequences.

--bug: the init loop indexes the layer list off by one at its end, so one projection is initialised
twice and the last one keeps the library's default init (std 0.02): the model trains, a little worse
(the repeated weight initialisation reports).
"""
import argparse

import torch
from transformers import GPT2Config, GPT2LMHeadModel
from transformers.pytorch_utils import Conv1D

VOCAB = 32


def init_projections(model, std, bug):
    layers = [m for m in model.modules() if isinstance(m, (torch.nn.Linear, Conv1D)) and m.weight.dim() == 2]
    layers = [m for m in layers if m is not model.lm_head]  # tied to the embedding
    for i in range(len(layers)):
        layer = layers[i - 1] if bug and i == len(layers) - 1 else layers[i]
        torch.nn.init.normal_(layer.weight, mean=0.0, std=std)
    return layers


def get_batch(batch_size, seq_len, gen):
    start = torch.randint(1, VOCAB, (batch_size, 1), generator=gen)
    return (start + torch.arange(seq_len)) % VOCAB


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bug", action="store_true")
    parser.add_argument("--steps", type=int, default=12)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    config = GPT2Config(vocab_size=VOCAB, n_positions=64, n_embd=32, n_layer=2, n_head=2,
                        bos_token_id=0, eos_token_id=0, pad_token_id=0)
    model = GPT2LMHeadModel(config)
    layers = init_projections(model, 0.1, args.bug)
    last_std = layers[-1].weight.std().item()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)

    model.train()
    for step in range(args.steps):
        x = get_batch(16, 12, gen)
        loss = model(input_ids=x, labels=x).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 6 == 0:
            print(f"step {step}: loss {loss.item():.4f}")
    print(f"SYMPTOM last_projection_init_std={last_std:.3f} intended_std=0.100")


if __name__ == "__main__":
    main()
