"""Host cost of the tracker's write at an optimizer step (docs/collection.md §Model tracking), measured
side by side: the per-parameter work in Python as it was (baseline, bench/tracker_write_reference.py)
and in C++ (candidate, traincheck._core.TrackedParams, one call per step), the latter also with tensors
read through torch's getters only (as under a torch traincheck._torch_fields was not built against).

    python bench/step_claims_cost.py [--params 1000 10000 50000] [--rounds 7]

Per model size (that many small parameter tensors, each with a gradient, one SGD optimizer holding them
all): the write at an optimizer step, everything the tracker does per parameter on the training thread:
the check that each parameter is still its module's, signatures and change detection, the write's lists
and every claim of cpp/record/step_claims.h. Best of `--rounds`, in microseconds per parameter tensor,
into a recorder that drops what it is given (the recorder's encoding, which both share, is not timed).
Nothing changes between rounds, so no digest is taken: the cost timed is the one every step pays. Also
the plain optimizer step over the same parameters, for scale.
"""

import argparse
import time

import torch

from tracker_write_reference import PythonWrite
from traincheck import _core, _torch_fields
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


def best_us(f, rounds):
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - start)
    return best * 1e6


def measure(n, rounds):
    model = torch.nn.ParameterList([torch.nn.Parameter(torch.zeros(4)) for _ in range(n)])
    for p in model:
        p.grad = torch.ones(4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    core = DroppingCore()
    tracker = ModelTracker(core, style="sampler")
    tracker.track(model, "model")
    tracker._note_optimizer(optimizer, stepped=True)
    reference = PythonWrite(core, tracker.digester, [(e.name_id, e.param, e.owner, e.attr, e.model)
                                                     for e in tracker._all()])

    def candidate():
        tracker._all()
        tracker._write(None, None, None, only_changed=False, claims=lambda: tracker._step_claims(optimizer))

    plain = best_us(optimizer.step, rounds)
    baseline = best_us(lambda: reference.write(optimizer), rounds)
    _core.set_tensor_field_reader(None)
    getters = best_us(candidate, rounds)
    _core.set_tensor_field_reader(_torch_fields.reader())
    native = best_us(candidate, rounds)
    return plain / n, baseline / n, getters / n, native / n


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--params", type=int, nargs="+", default=[1000, 10000, 50000])
    p.add_argument("--rounds", type=int, default=7)
    args = p.parse_args()
    torch.set_num_threads(1)
    print("microseconds per parameter tensor and step")
    print(f"{'parameters':>10s} {'optimizer step':>15s} {'Python write (baseline)':>24s} "
          f"{'C++ write, getters':>19s} {'C++ write (candidate)':>22s} {'ratio':>6s}")
    for n in args.params:
        plain, baseline, getters, native = measure(n, args.rounds)
        print(f"{n:>10d} {plain:>15.3f} {baseline:>24.3f} {getters:>19.3f} {native:>22.3f} {native / baseline:>6.3f}")


if __name__ == "__main__":
    main()
