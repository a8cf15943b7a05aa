"""A full disk never takes the training down nor corrupts the trace. Simulated with a
file-size limit (RLIMIT_FSIZE, SIGXFSZ ignored): writes past it fail with EFBIG, and the one that crosses
it is cut short, as on a disk that fills up."""
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
