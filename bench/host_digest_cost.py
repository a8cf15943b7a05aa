"""Digests of host tensors, side by side: the torch ops (baseline: a bit view, a widening copy, a product and
a sum per batch, and Python per tensor to set them up) and `_core.HostDigests` reading the tensors in place
(candidate: one C++ call per batch, one pass, no temporary). Both give the same digests (checked here).

    python bench/host_digest_cost.py [--rounds 5]

Per set of float32 tensors, as a model's parameters or gradients at one tracker write: best of `--rounds`,
milliseconds per batch and microseconds per tensor, the ratio candidate / baseline.
"""

import argparse
import time

import torch

from traincheck.tracking.digest import Digester

SETS = {
    "ResNet-18 size: 11.2M elements in 62 tensors": [11_200_000 // 62] * 62,
    "Transformer layers: 4M elements in 200 tensors": [20_000] * 200,
    "1k tensors of 256": [256] * 1000,
    "50k tensors of 4": [4] * 50_000,
}


def best_ms(f, rounds):
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - start)
    return best * 1e3


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
    torch.manual_seed(0)
    print(f"{'tensors':48s} {'torch ops ms':>13s} {'in place ms':>12s} {'us/tensor (base/cand)':>22s} {'ratio':>6s}")
    for name, sizes in SETS.items():
        tensors = [torch.randn(n) for n in sizes]
        baseline, candidate = Digester(), Digester()
        baseline._in_place = False
        if baseline.digests(tensors) != candidate.digests(tensors):
            raise SystemExit(f"{name}: the two paths disagree")
        base = best_ms(lambda: baseline.digests(tensors), args.rounds)
        cand = best_ms(lambda: candidate.digests(tensors), args.rounds)
        per = f"{base * 1e3 / len(sizes):.2f} / {cand * 1e3 / len(sizes):.2f}"
        print(f"{name:48s} {base:13.2f} {cand:12.2f} {per:>22s} {cand / base:6.3f}")


if __name__ == "__main__":
    main()
