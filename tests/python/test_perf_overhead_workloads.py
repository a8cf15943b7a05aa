"""What each overhead workload must do, run for a few iterations on the CPU: train (every timed iteration
runs the same backward passes and optimizer steps, its losses finite and changing from one iteration to the
next), write one time per iteration, and print a summary line with its iteration count; configs are
consistent with the scripts; the settrace baseline logs calls with their arguments."""
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKLOADS = ROOT / "eval" / "perf_overhead" / "workloads"
NAMES = sorted(p.name for p in WORKLOADS.iterdir() if (p / "main.py").is_file())
# The issue asks for MNIST, ResNet-18, the Transformer LM and at least three more of the paper's set.
REQUIRED = {"mnist", "resnet18", "transformer"}


def test_the_paper_workloads_are_present():
    assert REQUIRED <= set(NAMES) and len(NAMES) >= 6


ITERS = 3
# Optimizer steps per iteration; the transformer (the word_language_model example) updates its
# parameters by hand, without an optimizer.
OPTIMIZER_STEPS = {"dcgan": 2, "transformer": 0}

# All workloads run in one child process, one after the other, so that torch is imported once (seconds
# on a small machine) rather than once per workload; each runs as `__main__` in its own folder. The driver
# records, per workload, its stdout and what happens in each timed iteration (workload_common's timer
# marks them): the loss of every backward pass and every optimizer step.
DRIVER = """
import contextlib, io, json, os, runpy, sys, traceback
import torch
from torch.optim.optimizer import register_optimizer_step_post_hook
sys.path.insert(0, sys.argv[2])
import workload_common

events = []
timed = workload_common._TimedIteration
enter, exit_ = timed.__enter__, timed.__exit__
def enter_(self):
    events.append(["begin"])
    return enter(self)
def exit__(self, *exc):
    result = exit_(self, *exc)
    events.append(["end"])
    return result
timed.__enter__, timed.__exit__ = enter_, exit__
backward = torch.Tensor.backward
def backward_(self, *args, **kwargs):
    events.append(["backward", self.detach().sum().item()])
    return backward(self, *args, **kwargs)
torch.Tensor.backward = backward_
register_optimizer_step_post_hook(lambda *a: events.append(["step"]))

results = {}
for name, script, folder in json.loads(sys.argv[1]):
    os.chdir(folder)
    sys.argv = [script, "--iters", "%d"]
    events = []
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            runpy.run_path(script, run_name="__main__")
        error = None
    except BaseException:
        error = traceback.format_exc()
    results[name] = {"error": error, "stdout": out.getvalue(), "events": events}
print("RESULTS " + json.dumps(results))
""" % ITERS


@pytest.fixture(scope="module")
def three_iterations_each(tmp_path_factory):
    jobs = []
    for name in NAMES:
        folder = tmp_path_factory.mktemp(name)
        (folder / "iteration_times.txt").write_text("stale\n" * 10)  # must be overwritten, not appended to
        jobs.append((name, str(WORKLOADS / name / "main.py"), str(folder)))
    result = subprocess.run([sys.executable, "-c", DRIVER, json.dumps(jobs), str(WORKLOADS)], capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    line = [l for l in result.stdout.splitlines() if l.startswith("RESULTS ")][-1]
    runs = json.loads(line[len("RESULTS "):])
    return {name: (runs[name], Path(folder)) for name, _, folder in jobs}


def iterations_of(events):
    """The events of each timed iteration; nothing of interest happens outside them."""
    iterations, current = [], None
    for event in events:
        if event[0] == "begin":
            assert current is None, "iterations nest"
            current = []
        elif event[0] == "end":
            iterations.append(current)
            current = None
        else:
            assert current is not None, f"{event[0]} outside a timed iteration"
            current.append(event)
    assert current is None, "an iteration never ended"
    return iterations


@pytest.mark.parametrize("name", NAMES)
def test_workload_writes_one_time_per_iteration(name, three_iterations_each):
    run, folder = three_iterations_each[name]
    assert run["error"] is None, run["error"]
    for name in ("iteration_times.txt", "iteration_cpu_times.txt"):
        lines = (folder / name).read_text().splitlines()
        assert len(lines) == ITERS, name
        assert all(float(line) > 0 for line in lines)


@pytest.mark.parametrize("name", NAMES)
def test_workload_trains_in_each_timed_iteration(name, three_iterations_each):
    run, _ = three_iterations_each[name]
    assert run["error"] is None, run["error"]
    iterations = iterations_of(run["events"])
    assert len(iterations) == ITERS
    # Every iteration does the same work: its backward passes, then updates (steps after the backward).
    kinds = [[event[0] for event in it] for it in iterations]
    assert all(k == kinds[0] for k in kinds), kinds
    assert kinds[0].count("step") == OPTIMIZER_STEPS.get(name, 1), kinds[0]
    assert "backward" in kinds[0] and kinds[0][0] == "backward", kinds[0]
    # The losses are finite and change: each backward pass of an iteration sees a different loss in
    # another iteration (a model that does not learn, or a batch that repeats, would give the same).
    losses = [[event[1] for event in it if event[0] == "backward"] for it in iterations]
    assert all(math.isfinite(loss) for it in losses for loss in it), losses
    for position in range(len(losses[0])):
        assert len({it[position] for it in losses}) == ITERS, losses


@pytest.mark.parametrize("name", NAMES)
def test_workload_prints_its_iterations_and_finite_losses(name, three_iterations_each):
    run, _ = three_iterations_each[name]
    assert run["error"] is None, run["error"]
    summary = run["stdout"].strip().splitlines()[-1]
    assert re.match(rf"{name}: {ITERS} iterations, ", summary), summary
    losses = re.findall(r"[Ll]oss(?:_\w+)? (\S+)", summary)
    assert losses and all(math.isfinite(float(loss)) for loss in losses), summary


@pytest.mark.parametrize("name", NAMES)
def test_configs_name_the_script_and_its_models(name):
    source = (WORKLOADS / name / "main.py").read_text()
    plain = yaml.safe_load((WORKLOADS / name / "md-config.yml").read_text())
    tracked = yaml.safe_load((WORKLOADS / name / "md-config-var.yml").read_text())
    assert plain == {"pyscript": "main.py", "modules_to_instr": ["torch"]}
    assert {k: tracked[k] for k in plain} == plain
    assert tracked["model_tracker_style"] == "sampler"
    for model in tracked["models_to_track"]:
        # the tracker rewrites assignments to these names
        assert re.search(rf"^\s*{re.escape(model)} = ", source, re.M), f"{model} is never assigned in {name}"


def test_settrace_runner_logs_calls_returns_and_arguments(tmp_path):
    script = tmp_path / "toy.py"
    script.write_text("import sys\n\ndef add(a, b):\n    return a + b\n\nprint(add(2, b='x' * 500)[:3] if False "
                      "else add(40, 2), sys.argv[1:])\n")
    log = tmp_path / "calls.log"
    result = subprocess.run([sys.executable, str(ROOT / "eval" / "perf_overhead" / "settrace_runner.py"),
                             "--no-preimport", "--max-repr", "50", "--log", str(log), str(script), "--flag", "v"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "42 ['--flag', 'v']" in result.stdout
    text = log.read_text()
    assert re.search(r"^call add .*toy\.py:3 \(a=40, b=2\)$", text, re.M)
    assert re.search(r"^return add .*toy\.py:4 \(a=40, b=2\) -> 42$", text, re.M)
