"""A transformers model trained in a hand-written loop, as the Hugging Face course does without the
Trainer: BertForMaskedLM from a small BertConfig, 15% of tokens masked per batch, torch.optim.AdamW with
transformers.get_linear_schedule_with_warmup, the loss from the model's outputs (outputs.loss), gradient
clipping, evaluation of the masked-token accuracy under no_grad."""
import argparse

import torch
from transformers import BertConfig, BertForMaskedLM, get_linear_schedule_with_warmup

MASK_ID, VOCAB = 4, 50


def mask_tokens(ids, gen):
    labels = ids.clone()
    chosen = torch.rand(ids.shape, generator=gen) < 0.15
    labels[~chosen] = -100
    inputs = ids.clone()
    inputs[chosen] = MASK_ID
    return inputs, labels


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--steps", type=int, default=12)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    config = BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=24)
    model = BertForMaskedLM(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    scheduler = get_linear_schedule_with_warmup(optimizer, num_warmup_steps=2, num_training_steps=args.steps)

    def batch(n=16):
        # Repeating patterns (period 3) so a masked token is predictable from its neighbours.
        base = torch.randint(5, VOCAB, (n, 3), generator=gen)
        return base.repeat(1, 8)

    model.train()
    for step in range(args.steps):
        inputs, labels = mask_tokens(batch(), gen)
        outputs = model(input_ids=inputs, labels=labels)
        loss = outputs.loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        if step % 4 == 0:
            print(f"step {step}: loss {loss.item():.4f} lr {scheduler.get_last_lr()[0]:.2e}")

    model.eval()
    with torch.no_grad():
        inputs, labels = mask_tokens(batch(32), gen)
        preds = model(input_ids=inputs).logits.argmax(-1)
        acc = (preds[labels != -100] == labels[labels != -100]).float().mean().item()
    print(f"FINAL loss={loss.item():.6f} masked_acc={acc:.4f}")


if __name__ == "__main__":
    main()
