"""Cost of the tracker's claims at optimizer steps (every claim of cpp/record/step_claims.h; docs/collection.md
§Model tracking), measured side by side.

    python bench/step_claims_cost.py [--params 1000 10000 50000] [--rounds 7]

Per model size (that many small parameter tensors, each with a gradient, one SGD optimizer holding them
all): the tracker's write at an optimizer step without the claims (baseline: the write as before them)
and with them (candidate), best of `--rounds`, into a recorder that drops what it is given (so only the
tracker's Python work is timed, not the trace writer, which both share). Also the plain optimizer step
over the same parameters, for scale.
"""

import argparse
import time

import torch

from traincheck.tracking.tracker import ModelTracker


class DroppingCore:
    """The recorder calls ModelTracker makes, doing nothing."""

    def intern(self, text):
        return hash(text) & 0xFFFFFFFF

    def is_recording(self):
        return True

    def set_inside_recorder(self, value):
        return False

    def record_var_states(self, *args, **kwargs):
        pass


def best_ms(f, rounds):
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - start)
    return best * 1e3


def measure(n, rounds):
    model = torch.nn.ParameterList([torch.nn.Parameter(torch.zeros(4)) for _ in range(n)])
    for p in model:
        p.grad = torch.ones(4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    tracker = ModelTracker(DroppingCore(), style="sampler")
    tracker.track(model, "model")
    entries = tracker._all()
    plain = best_ms(optimizer.step, rounds)
    without = best_ms(lambda: tracker._write(entries, None, None, only_changed=False), rounds)
    with_claims = best_ms(lambda: tracker._write(entries, None, None, only_changed=False,
                                                 claims=lambda written: tracker._step_claims(written, optimizer)),
                          rounds)
    return plain, without, with_claims


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--params", type=int, nargs="+", default=[1000, 10000, 50000])
    p.add_argument("--rounds", type=int, default=7)
    args = p.parse_args()
    torch.set_num_threads(1)
    print(f"{'parameters':>10s} {'optimizer step ms':>18s} {'write ms (baseline)':>20s} "
          f"{'write+claims ms (candidate)':>28s} {'ratio':>6s} {'claims ms':>10s}")
    for n in args.params:
        plain, without, with_claims = measure(n, args.rounds)
        print(f"{n:>10d} {plain:>18.1f} {without:>20.1f} {with_claims:>28.1f} {with_claims / without:>6.2f} "
              f"{with_claims - without:>10.1f}")


if __name__ == "__main__":
    main()
