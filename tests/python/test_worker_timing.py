"""Two runs of one program give the same trace in its training process, whatever its DataLoader workers'
timing (docs/collection.md §Determinism): the main process takes worker results off
their queue as they arrive, so a step received two batches or none and the unpickling calls inside fell
in different steps from run to run; nothing is recorded there now, while each batch's use is recorded
once, in the step that consumes it."""
import collections

from conftest import collect, read_trace_files, write_script

TRAIN = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(1)
x = torch.randn(512, 8)
y = (x.sum(1, keepdim=True) > 0).float()
loader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True, num_workers=2)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for xb, yb in loader:
    loss = nn.functional.binary_cross_entropy_with_logits(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", round(loss.item(), 6))
"""


def _main_process_calls(out) -> collections.Counter:
    """(function, step) of every pre-record of the process that started first: the training process."""
    by_process = collections.defaultdict(list)
    for records in read_trace_files(out).values():
        for r in records:
            by_process[r["process_id"]].append(r)
    main = min(by_process.values(), key=lambda rs: min(r["time"] for r in rs))
    return collections.Counter((r["function"], r["meta_vars"]["step"]) for r in main
                               if r["type"] == "function_call (pre)")


def test_worker_timing_leaves_the_training_process_trace_unchanged(tmp_path):
    script = write_script(tmp_path, "train.py", TRAIN)
    runs = []
    for out in ("run1", "run2", "run3"):
        r = collect(tmp_path, "-p", str(script), "--output-dir", out)
        assert r.returncode == 0, r.stderr
        runs.append(_main_process_calls(tmp_path / out))
    assert runs[0] == runs[1] == runs[2]
    next_data = "torch.utils.data.dataloader._MultiProcessingDataLoaderIter._next_data"
    assert [runs[0][(next_data, step)] for step in range(1, 33)] == [1] * 32  # one batch per step
    assert not any(f.startswith("torch.multiprocessing.reductions.rebuild") for f, _ in runs[0])
