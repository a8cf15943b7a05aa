"""A tiny GPT-2, built from a config (no download), trained with transformers' Trainer on synthetic tokens,
evaluated every few steps, then asked to generate; writes its losses and generated tokens as JSON."""
import argparse
import json
import time

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, TrainingArguments

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=6)
parser.add_argument("--eval-steps", type=int, default=3, help="evaluate every N steps (0: never)")
parser.add_argument("--result", default="result.json")
parser.add_argument("--times", default=None,
                    help="write each optimisation step's seconds to this file: wall time and training-thread CPU time")
args = parser.parse_args()


class Tokens(torch.utils.data.Dataset):
    def __init__(self, n, seed):
        self.ids = torch.randint(0, 100, (n, 16), generator=torch.Generator().manual_seed(seed))

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


class StepTimer(TrainerCallback):
    def __init__(self):
        self.seconds = []

    def on_step_begin(self, args, state, control, **kwargs):
        self.start = (time.perf_counter(), time.thread_time())

    def on_step_end(self, args, state, control, **kwargs):
        self.seconds.append((time.perf_counter() - self.start[0], time.thread_time() - self.start[1]))


torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(vocab_size=100, n_positions=32, n_embd=32, n_layer=2, n_head=2))
evaluating = args.eval_steps > 0
training_args = TrainingArguments(
    output_dir="hf_out", max_steps=args.steps, per_device_train_batch_size=4, per_device_eval_batch_size=4,
    eval_strategy="steps" if evaluating else "no", eval_steps=args.eval_steps if evaluating else None,
    logging_steps=1, save_strategy="no", report_to=[], use_cpu=True, disable_tqdm=True, seed=0)
timer = StepTimer()
trainer = Trainer(model=model, args=training_args, train_dataset=Tokens(64, 1),
                  eval_dataset=Tokens(8, 2) if evaluating else None, callbacks=[timer])
trainer.train()
model.eval()
generated = model.generate(torch.tensor([[1, 2, 3, 4]]), max_new_tokens=5, do_sample=False, pad_token_id=0)
with open(args.result, "w") as f:
    json.dump({"losses": [h["loss"] for h in trainer.state.log_history if "loss" in h],
               "eval_losses": [h["eval_loss"] for h in trainer.state.log_history if "eval_loss" in h],
               "global_step": trainer.state.global_step, "generated": generated.tolist()}, f)
if args.times:
    with open(args.times, "w") as f:
        f.writelines(f"{wall} {cpu}\n" for wall, cpu in timer.seconds)
