"""The script behaves as without the tool: wrapped torch still pickles, copies, saves, traces and binds."""
import textwrap

from conftest import all_records, collect, write_script

CHECKS = """
import copy, inspect, io, pickle, weakref
import torch, torch.nn as nn
import torch.nn.functional as F
from traincheck import _core

assert _core.is_wrapper(torch.relu) and _core.is_wrapper(F.relu)
assert torch.relu.__name__ == "relu" and F.relu.__module__ == "torch.nn.functional"
assert F.relu.__wrapped__ is _core.unwrap(F.relu)
assert list(inspect.signature(F.relu).parameters) == ["input", "inplace"]
assert weakref.ref(F.relu)() is F.relu
assert pickle.loads(pickle.dumps(F.relu)) is F.relu
assert pickle.loads(pickle.dumps(torch.relu))(torch.tensor([-1.0])).item() == 0.0
assert copy.deepcopy(F.relu) is F.relu

model = nn.Sequential(nn.Linear(4, 3), nn.ReLU())
clone = copy.deepcopy(model)
buf = io.BytesIO()
torch.save(model, buf)
buf.seek(0)
loaded = torch.load(buf, weights_only=False)
x = torch.randn(2, 4)
assert torch.equal(loaded(x), model(x)) and torch.equal(clone(x), model(x))
traced = torch.jit.trace(model, x)
assert torch.allclose(traced(x), model(x))

# Methods bind self; a classmethod and a staticmethod keep working; exceptions pass through unchanged.
assert nn.Linear.forward is nn.Linear.__dict__["forward"]
opt = torch.optim.SGD(model.parameters(), lr=0.1)
opt.zero_grad()
err = ValueError("mine")
def boom(*a):
    raise err
try:
    opt.step(boom)  # SGD.step calls the closure inside the wrapped call
except ValueError as e:
    assert e is err
else:
    raise AssertionError("hook exception swallowed")
print("ALL-OK")
"""


def test_wrapped_torch_keeps_python_semantics(tmp_path):
    write_script(tmp_path, "checks.py", CHECKS)
    result = collect(tmp_path, "-p", "checks.py", "--output-dir", "out")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ALL-OK" in result.stdout
    exc = [r for r in all_records(tmp_path / "out") if r["type"] == "function_call (post) (exception)"]
    assert any(r["function"] == "torch.optim.sgd.SGD.step" and r["exception"] == "ValueError" for r in exc)
