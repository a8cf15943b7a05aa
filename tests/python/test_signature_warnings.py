"""traincheck-check warns about missing API signatures only when the trace's api_signatures.json is missing:
with it read, the APIs left without one are builtins whose signature no collector records (torch.clamp),
named by position at inference as at checking, and a warning on every correct run's check would be noise.
With -d they are listed."""

import shutil
import subprocess

from conftest import collect, write_script

SCRIPT = """
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(12):
    x, y = torch.randn(8, 16), torch.randint(0, 4, (8,))
    opt.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # clamps the clip coefficient: torch.clamp, a builtin
    opt.step()
"""

def _check(tmp_path, trace, out, *extra):
    proc = subprocess.run(["traincheck-check", "-f", str(trace), "-i", "inv.json", "-o", out, *extra], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stderr


def test_builtins_without_a_signature_are_listed_only_with_debug_and_a_missing_file_is_warned(tmp_path):
    write_script(tmp_path, "train.py", SCRIPT)
    assert collect(tmp_path, "-p", "train.py", "--output-dir", "run", "--no-pack").returncode == 0
    infer = subprocess.run(["traincheck-infer", "-f", "run", "-o", "inv.json"], cwd=tmp_path, capture_output=True,
                           text=True, timeout=300)
    assert infer.returncode == 0, infer.stderr
    quiet = _check(tmp_path, tmp_path / "run", "c1")
    assert "signature" not in quiet, quiet
    debug = _check(tmp_path, tmp_path / "run", "c2", "-d")
    assert "no signature (builtins, named by position as at inference): torch._VariableFunctionsClass.clamp" in debug

    without_file = tmp_path / "run_without_signatures"
    shutil.copytree(tmp_path / "run", without_file)
    (without_file / "api_signatures.json").unlink()
    warned = _check(tmp_path, without_file, "c3")
    assert "warning: trace 'run_without_signatures': no signature recorded for" in warned, warned
