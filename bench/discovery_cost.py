"""Host cost of tracking without naming a model (tracking/discovery.py), measured side by side.

    python bench/discovery_cost.py [--params 1000 10000 50000] [--rounds 7]

Per model size (that many small parameter tensors, each with a gradient, one SGD optimizer holding them
all), the tracker's hook at an optimizer step (the write with its claims), best of `--rounds`, into a
recorder that drops what it is given:
- baseline: the model named (--models-to-track), no discovery;
- candidate: the model found by discovery, after its first step (what every later step pays: one count
  of the optimizer's groups' tensors);
and the one-time walk that finds the model at the first step (a pass over the live objects and the
parameters of the roots; the first write of the states, which a named model pays at its assignment, not
counted). The
baseline and candidate are the same write; their difference is discovery's per-step cost.
"""

import argparse
import time

import torch

from step_claims_cost import DroppingCore, best_ms  # the same recorder stand-in and timer (bench/ is on sys.path)

from traincheck.tracking import discovery
from traincheck.tracking.tracker import ModelTracker


def measure(n, rounds):
    model = torch.nn.ParameterList([torch.nn.Parameter(torch.zeros(4)) for _ in range(n)])
    for p in model:
        p.grad = torch.ones(4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    named = ModelTracker(DroppingCore(), style="sampler")
    named.track(model, "model")
    found = ModelTracker(DroppingCore(), style="sampler", discover=True)
    start = time.perf_counter()
    discovery.owners_of(list(model.parameters()), set())  # the first step's walk alone
    walk_ms = (time.perf_counter() - start) * 1e3
    found.after_optimizer_step(optimizer, (), {})  # the first step: the walk, the model tracked and written
    assert len(found._all()) == n, "discovery tracks every parameter the optimizer holds"
    baseline = best_ms(lambda: named.after_optimizer_step(optimizer, (), {}), rounds)
    candidate = best_ms(lambda: found.after_optimizer_step(optimizer, (), {}), rounds)
    return baseline, candidate, walk_ms


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--params", type=int, nargs="+", default=[1000, 10000, 50000])
    p.add_argument("--rounds", type=int, default=7)
    args = p.parse_args()
    print(f"{'tensors':>8} {'named ms':>10} {'found ms':>10} {'ratio':>7} {'added us/step':>14} "
          f"{'added us/tensor':>16} {'first step walk ms':>19}")
    for n in args.params:
        baseline, candidate, walk_ms = measure(n, args.rounds)
        added_us = (candidate - baseline) * 1e3
        print(f"{n:>8} {baseline:>10.2f} {candidate:>10.2f} {candidate / baseline:>7.3f} {added_us:>14.1f} "
              f"{added_us / n:>16.4f} {walk_ms:>19.1f}")


if __name__ == "__main__":
    main()
