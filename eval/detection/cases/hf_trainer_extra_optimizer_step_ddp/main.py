"""Two DDP ranks (torchrun, gloo, CPU) train a tiny GPT-2 (built from its config, no download) with
transformers' Trainer on synthetic sequences. A callback makes one more optimizer step of its own at the
end of every Trainer step, for an extra objective (a weight penalty): the
Trainer steps, then the script steps, so each recorded step holds more than one optimizer step. That is
a correct program: both ranks take every step, their replicas stay equal.

--bug: the extra step runs on rank 0 only (a `if rank == 0:` meant for logging wraps it), so the
replicas drift apart from the first step on; DDP's averaged gradients never bring them back.
"""
import argparse
import os
import tempfile

import torch
import torch.distributed as dist
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, TrainingArguments

VOCAB = 32


class ExtraOptimizerStep(TrainerCallback):
    def __init__(self, bug):
        self.bug = bug
        self.trainer = None

    def on_step_end(self, args, state, control, model=None, **kwargs):
        rank = dist.get_rank() if dist.is_initialized() else 0
        if self.bug and rank != 0:
            return
        # A weight-decay style extra objective, stepped by the Trainer's optimizer. Its gradients come from
        # autograd.grad, outside DDP's gradient hooks: the same on every rank, as its parameters are.
        params = [p for p in model.parameters() if p.requires_grad]
        penalty = 1e-2 * sum(p.pow(2).sum() for p in params)
        for p, g in zip(params, torch.autograd.grad(penalty, params)):
            p.grad = g
        self.trainer.optimizer.step()
        self.trainer.optimizer.zero_grad(set_to_none=True)


class Sequences(torch.utils.data.Dataset):
    def __init__(self, n, seed):
        gen = torch.Generator().manual_seed(seed)
        start = torch.randint(1, VOCAB, (n, 1), generator=gen)
        self.data = (start + torch.arange(12)) % VOCAB

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        return {"input_ids": self.data[i], "labels": self.data[i]}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bug", action="store_true")
    parser.add_argument("--steps", type=int, default=6)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    config = GPT2Config(vocab_size=VOCAB, n_positions=32, n_embd=32, n_layer=1, n_head=2,
                        bos_token_id=0, eos_token_id=0, pad_token_id=0)
    model = GPT2LMHeadModel(config)
    extra = ExtraOptimizerStep(args.bug)
    with tempfile.TemporaryDirectory() as out:
        training_args = TrainingArguments(
            output_dir=out, max_steps=args.steps, per_device_train_batch_size=8, learning_rate=3e-3,
            use_cpu=True, ddp_backend="gloo", report_to="none", save_strategy="no", logging_strategy="no",
            seed=args.seed, data_seed=args.seed, dataloader_num_workers=0, disable_tqdm=True)
        trainer = Trainer(model=model, args=training_args, train_dataset=Sequences(128, args.seed),
                          callbacks=[extra])
        extra.trainer = trainer
        trainer.train()
    weights = torch.cat([p.detach().flatten() for p in model.parameters()])
    if dist.is_initialized():
        others = [torch.zeros_like(weights) for _ in range(dist.get_world_size())]
        dist.all_gather(others, weights)
        diff = max((o - others[0]).abs().max().item() for o in others)
    else:
        diff = 0.0
    if int(os.environ.get("RANK", "0")) == 0:
        print(f"SYMPTOM max_weight_diff_between_ranks={diff:.6f}")


if __name__ == "__main__":
    main()
