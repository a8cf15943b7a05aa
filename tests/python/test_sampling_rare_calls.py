"""Sampling never drops rare calls: during a sampled-out step, calls of APIs that run
at most every second step (model.train() / model.eval() once per epoch) are still recorded, with the calls
they make, while per-step APIs are recorded at sampled steps only."""

import collections
import textwrap

from conftest import all_records, collect, write_script

# Validation lives in a helper module, as in many real scripts: the collector's stage annotation (which
# turns recording back on at a stage change) never sees it.
HELPERS = textwrap.dedent(
    """
    import torch

    def validate(model, x):
        model.eval()
        with torch.no_grad():
            return model(x)
    """
)

EPOCH_LOOP = textwrap.dedent(
    """
    import torch
    import torch.nn as nn
    from helpers import validate

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.1), nn.Linear(8, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(32, 4), torch.randint(0, 2, (32,))
    train_batches = [(x[i:i + 4], y[i:i + 4]) for i in range(0, 16, 4)]
    for epoch in range(5):
        model.train()
        for xb, yb in train_batches:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(xb), yb).backward()
            optimizer.step()
        validate(model, x[16:])
    """
)


def pre_counts(out_dir):
    return collections.Counter(r["function"] for r in all_records(out_dir) if r["type"] == "function_call (pre)")


def test_once_per_epoch_calls_are_recorded_at_sampled_out_steps(tmp_path):
    write_script(tmp_path, "helpers.py", HELPERS)
    write_script(tmp_path, "epochs.py", EPOCH_LOOP)
    full = collect(tmp_path, "-p", "epochs.py", "--output-dir", "every", "--sampling-interval", "1",
                   "--warm-up-steps", "1")
    sampled = collect(tmp_path, "-p", "epochs.py", "--output-dir", "sampled", "--sampling-interval", "7",
                      "--warm-up-steps", "2")
    assert full.returncode == 0, full.stderr
    assert sampled.returncode == 0, sampled.stderr
    every, few = pre_counts(tmp_path / "every"), pre_counts(tmp_path / "sampled")
    train, evaluate = "torch.nn.modules.module.Module.train", "torch.nn.modules.module.Module.eval"
    # model.train() recurses into 3 children: 4 Module.train calls per train(), 4 more per eval().
    assert every[train] == 5 * 8 and every[evaluate] == 5, (every, few)
    assert few[train] == every[train] and few[evaluate] == every[evaluate]
    # Per-step APIs follow the sampling.
    step = "torch.optim.sgd.SGD.step"
    assert every[step] == 20 and few[step] < 10


def test_a_rare_call_is_recorded_with_the_step_it_ran_in(tmp_path):
    write_script(tmp_path, "helpers.py", HELPERS)
    write_script(tmp_path, "epochs.py", EPOCH_LOOP)
    runs = {}
    for out, interval, warm_up in (("every", "1", "1"), ("sampled", "7", "2")):
        result = collect(tmp_path, "-p", "epochs.py", "--output-dir", out, "--sampling-interval", interval,
                         "--warm-up-steps", warm_up)
        assert result.returncode == 0, result.stderr
        runs[out] = sorted((r["function"], r["meta_vars"]["step"]) for r in all_records(tmp_path / out)
                           if r["function"].startswith("torch.nn.modules.module.Module.") and
                           r["type"] == "function_call (pre)" and r["meta_vars"]["step"] > 0)
    assert runs["sampled"] == runs["every"]


DISABLED_REGION = textwrap.dedent(
    """
    import torch
    import torch.nn as nn
    import traincheck.instrumentor.tracer as tc_tracer

    torch.manual_seed(0)
    model = nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for i in range(40):
        if 3 <= i + 1 <= 30:  # the script turns recording off for these iterations (until the next step)
            tc_tracer.DISABLE_WRAPPER = True
        optimizer.zero_grad()
        model(torch.randn(2, 4)).sum().backward()
        optimizer.step()
    """
)


def test_a_per_step_api_is_not_taken_for_rare_after_a_region_the_script_disabled(tmp_path):
    write_script(tmp_path, "disabled.py", DISABLED_REGION)
    result = collect(tmp_path, "-p", "disabled.py", "--output-dir", "out", "--sampling-interval", "7",
                     "--warm-up-steps", "2")
    assert result.returncode == 0, result.stderr
    steps = sorted({r["meta_vars"]["step"] for r in all_records(tmp_path / "out")
                    if r["function"] == "torch.optim.sgd.SGD.step"})
    # Sampled steps 1, 2, 9, 16, 23, 30, 37; 9 to 30 fall in the disabled region. Were its steps not
    # counted, SGD.step would look rare from step 31 on (2 steps seen in 31) and be recorded every step.
    assert steps == [1, 2, 37]
