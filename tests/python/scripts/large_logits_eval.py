"""Evaluation loop of a language-model head with 25 MB logits (the seed Transformer's shape).

Under no_grad, each step computes the logits and their log_softmax (two 25 MB tensors) while the previous
step's output is still alive. Under glibc this is the allocation pattern that fragments the heap when the
small-block traffic between the tensors changes (docs/collection.md §Memory). Prints the resident size in
MB after every step, one `rss <MB>` line each, at the end.
"""

import array
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB = 18328  # 350 x 18328 float32 = 25.6 MB, the seed Transformer's Wikitext-2 logits


PAGE = os.sysconf("SC_PAGE_SIZE")


def resident_mb() -> int:
    # os.read of statm: no buffered file object, whose 8 KB buffer would itself change the heap's pattern.
    fd = os.open("/proc/self/statm", os.O_RDONLY)
    try:
        return int(os.read(fd, 128).split()[1]) * PAGE // (1 << 20)
    finally:
        os.close(fd)


def main(steps: int) -> None:
    torch.manual_seed(0)
    decoder = nn.Linear(200, VOCAB)
    hidden = torch.randn(350, 200)
    total = 0.0
    # Kept in a preallocated array and printed at the end: printing every step changes the pattern.
    rss = array.array("q", [0] * steps)
    with torch.no_grad():
        for i in range(steps):
            output = decoder(hidden)
            output = F.log_softmax(output, dim=-1)
            output = output.view(-1, VOCAB)
            total += output[0, 0].item()
            rss[i] = resident_mb()
    print("\n".join(f"rss {mb}" for mb in rss), flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 60)
