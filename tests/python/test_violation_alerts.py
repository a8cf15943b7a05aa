"""Violations while training runs (docs/collection.md §Violations while training runs): each invariant's first violation printed on stderr
as it is found (--on-violation warn, the default), the script's traincheck.on_violation callbacks called
at the next step boundary, and --on-violation raise stopping the run there with traincheck.ViolationError,
which the script's own exception handling sees."""
import json
import re

import pytest

from conftest import SCRIPTS, collect
from test_online_check import INVARIANT

# mlp_adam.py's loop, long and slow enough that the writer thread checks the buggy step while the loop
# still runs; at iterations 3, 5 and 7 the gradients are dropped before the update, so Adam.step never
# reaches _single_tensor_adam (the invariant's violations, at steps 4, 6 and 8).
SCRIPT = """
import sys, time
import torch
import torch.nn as nn
import traincheck

seen = []
traincheck.on_violation(lambda v: seen.append((i, v)))
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
inputs = torch.randn(300, 8, 16)
labels = torch.randint(0, 4, (300, 8))
try:
    for i, (x, y) in enumerate(zip(inputs, labels)):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        if i in (3, 5, 7):
            optimizer.zero_grad()
        optimizer.step()
        time.sleep(0.03)
except traincheck.ViolationError as e:
    v = e.violations[0]
    print(f"stopped at iteration {i}: {v.label} at step {v.step} ({v.stage}), {v.examples} examples")
    print("callbacks before the stop:", len(seen))
    sys.exit(3)
print("finished", len(seen), "callback(s), the first at iteration", seen[0][0] if seen else None, seen[0][1] if seen else "")
"""


def setup(tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT)
    (tmp_path / "inv.json").write_text(json.dumps(INVARIANT) + "\n")


def test_warn_prints_each_invariants_first_violation_once_and_calls_back_while_the_loop_runs(tmp_path):
    setup(tmp_path)
    result = collect(tmp_path, "-p", "train.py", "-i", "inv.json", "--output-dir", "run")
    assert result.returncode == 0, result.stdout + result.stderr
    alerts = [line for line in result.stderr.splitlines() if line.startswith("traincheck: violation")]
    # Three violations, one line: the invariant's first.
    assert len(alerts) == 1, result.stderr
    assert alerts[0].startswith("traincheck: violation at step 4 (training): "), alerts
    assert "(held on 10 examples); see " in alerts[0] and alerts[0].endswith("failed.log"), alerts
    # The callback ran in the training thread at a step boundary, well before the loop's 300 iterations ended.
    finished = [line for line in result.stdout.splitlines() if line.startswith("finished")]
    assert finished and finished[0].startswith("finished 1 callback(s), the first at iteration "), result.stdout
    first_at = int(finished[0].split("iteration ")[1].split()[0])
    assert 4 <= first_at < 299, finished


def test_raise_stops_the_loop_at_a_step_boundary_with_the_scripts_own_exception_handling(tmp_path):
    setup(tmp_path)
    result = collect(tmp_path, "-p", "train.py", "-i", "inv.json", "--output-dir", "run", "--on-violation", "raise")
    assert result.returncode == 3, result.stdout + result.stderr  # the script's own exit code
    stopped = [line for line in result.stdout.splitlines() if line.startswith("stopped at iteration")]
    assert stopped, result.stdout + result.stderr
    iteration = int(stopped[0].split()[3].rstrip(":"))
    assert 4 <= iteration < 299, stopped
    assert stopped[0].endswith("at step 4 (training), 10 examples"), stopped
    assert "callbacks before the stop: 1" in result.stdout  # callbacks run before the raise
    # The run's outputs are complete: the trace, failed.log and the summary line at exit.
    entries = [json.loads(line) for line in (tmp_path / "run" / "online_check" / "failed.log").read_text().splitlines()]
    assert entries and entries[0]["trace"][0]["meta_vars.step"] == 4
    assert re.search(r"online check: [123] violations of 1 invariants", result.stderr), result.stderr


def test_log_keeps_violations_to_the_files(tmp_path):
    setup(tmp_path)
    result = collect(tmp_path, "-p", "train.py", "-i", "inv.json", "--output-dir", "run", "--on-violation", "log")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "traincheck: violation" not in result.stderr
    assert "finished 1 callback(s)" in result.stdout  # callbacks are not a console setting
    assert len((tmp_path / "run" / "online_check" / "failed.log").read_text().splitlines()) == 3


def test_an_unknown_on_violation_in_the_yaml_config_is_refused_before_the_script_runs(tmp_path):
    setup(tmp_path)
    (tmp_path / "cfg.yml").write_text("pyscript: train.py\ninvariants: [inv.json]\non_violation: stop\noutput_dir: cfg\n")
    result = collect(tmp_path, "--use-config", "--config", "cfg.yml")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "on_violation must be one of log, warn, raise, not 'stop'" in result.stderr
    assert "finished" not in result.stdout and not (tmp_path / "cfg").exists()


def test_on_violation_outside_collect_registers_and_never_calls():
    import traincheck
    from traincheck import violations

    calls = []

    def callback(violation):
        calls.append(violation)

    try:
        assert traincheck.on_violation(callback) is callback  # usable as a decorator
        traincheck.start_step()  # no in-process check: nothing to deliver
        assert calls == []
        with pytest.raises(TypeError, match="callable"):
            traincheck.on_violation("not callable")
    finally:
        violations._callbacks.remove(callback)


def test_an_uncaught_violation_error_points_at_the_step_boundary_the_loop_header(tmp_path):
    # The script without its own handling: the traceback Python prints ends at the loop header, where the
    # step began and the error was raised, not inside the loop's first statement nor in traincheck's code.
    script = SCRIPT.replace("try:\n", "if True:\n").replace("except traincheck.ViolationError as e:", "if False:")
    (tmp_path / "train.py").write_text(script)
    (tmp_path / "inv.json").write_text(json.dumps(INVARIANT) + "\n")
    header = next(n for n, line in enumerate(script.splitlines(), 1) if line.strip().startswith("for i, (x, y)"))
    result = collect(tmp_path, "-p", "train.py", "-i", "inv.json", "--output-dir", "run", "--on-violation", "raise")
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stderr.splitlines()
    start = lines.index("Traceback (most recent call last):")
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("traincheck.violations.ViolationError: "))
    frames = [i for i in range(start, end) if lines[i].lstrip().startswith("File ")]
    assert frames and all(str(tmp_path / "train.py") in lines[i] for i in frames), lines[start:end + 1]
    assert lines[frames[-1]].endswith(f'line {header}, in <module>'), lines[start:end + 1]
    assert lines[frames[-1] + 1].strip() == "for i, (x, y) in enumerate(zip(inputs, labels)):"
