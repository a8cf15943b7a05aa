"""A full disk never takes the training down, corrupts the trace, or silently turns the in-process check
off. Simulated with a file-size limit (RLIMIT_FSIZE, SIGXFSZ ignored): writes past it fail with EFBIG, and
the one that crosses it is cut short, as on a disk that fills up."""
import json
import resource
import signal
import subprocess
import sys

from conftest import SCRIPTS

LIMIT = 400_000  # bytes per file: the program's own output fits, the trace does not


def limited():
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))


def test_training_runs_on_with_its_exit_code_the_tool_says_so_and_every_trace_line_is_whole(tmp_path):
    script = tmp_path / "train.py"
    script.write_text((SCRIPTS / "mlp_adam.py").read_text() + "\nprint('training finished')\nraise SystemExit(3)\n")
    result = subprocess.run([sys.executable, "-m", "traincheck.collect_trace", "-p", str(script), "--output-dir", "out",
                             "--", "--iters", "60"], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                            preexec_fn=limited)
    assert result.returncode == 3, result.stderr[-3000:]
    assert "training finished" in result.stdout
    assert result.stderr.count("cannot write the trace") == 1, result.stderr[-3000:]
    assert "could not be written" in result.stderr and "the trace in" in result.stderr
    traces = list((tmp_path / "out").glob("trace_API_*.log"))
    assert traces
    for path in traces:
        data = path.read_bytes()
        assert 0 < len(data) <= LIMIT
        assert data.endswith(b"\n"), "a batch the disk could not take is cut back to whole lines"
        for line in data.splitlines():
            json.loads(line)
    infer = subprocess.run(["traincheck-infer", "-f", "out", "-o", "inv.json"], cwd=tmp_path, capture_output=True,
                           text=True, timeout=300)
    assert infer.returncode == 0, infer.stderr[-2000:]


# The in-process check cannot start when its invariants.json does not fit: a description this long makes
# it larger than the limit, while the collector's own files before the start (env_dump.txt, instr_opts.json)
# stay well under it.
SMALL_LIMIT = 200_000
LOOP = """
import sys
import torch
import torch.nn as nn
print("training starts", flush=True)
model = nn.Linear(4, 2)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
for i in range(3):
    optimizer.zero_grad()
    model(torch.randn(8, 4)).sum().backward()
    optimizer.step()
print("training finished", flush=True)
"""


def small_limit():
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (SMALL_LIMIT, SMALL_LIMIT))


def collect_with_check_that_cannot_start(tmp_path, on_violation):
    from test_online_check import INVARIANT

    (tmp_path / "train.py").write_text(LOOP)
    (tmp_path / "inv.json").write_text(json.dumps({**INVARIANT, "text_description": "x" * (SMALL_LIMIT + 1)}) + "\n")
    return subprocess.run([sys.executable, "-m", "traincheck.collect_trace", "-p", "train.py", "-i", "inv.json",
                           "--output-dir", "out", "--on-violation", on_violation], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600, preexec_fn=small_limit)


def test_raise_with_a_check_that_cannot_start_stops_before_training_with_one_clear_error(tmp_path):
    result = collect_with_check_that_cannot_start(tmp_path, "raise")
    assert result.returncode != 0, result.stdout + result.stderr
    assert "training starts" not in result.stdout, "the program must not start unchecked"
    errors = [line for line in result.stderr.splitlines() if "the in-process check cannot start" in line]
    assert len(errors) == 1 and errors[0].startswith("traincheck: error: "), result.stderr
    assert "invariants.json" in errors[0] and "--on-violation raise" in errors[0], errors
    assert "Traceback" not in result.stderr
    # The closing line is true: the program did not exit normally, it was stopped at its start.
    assert (f"online check: nothing checked (no summary: the program ended with exit code {result.returncode}, "
            "leaving none)") in result.stderr, result.stderr


def test_warn_with_a_check_that_cannot_start_trains_unchecked_and_says_so(tmp_path):
    result = collect_with_check_that_cannot_start(tmp_path, "warn")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "training finished" in result.stdout
    warnings = [line for line in result.stderr.splitlines() if "the in-process check cannot start" in line]
    assert len(warnings) == 1 and warnings[0].startswith("traincheck: warning: "), result.stderr
    assert "nothing is checked while this program runs" in warnings[0]
    assert "did not exit normally" not in result.stderr, result.stderr
    assert ("online check: nothing checked (no summary: the program exited normally, but the check could not start"
            in result.stderr), result.stderr
