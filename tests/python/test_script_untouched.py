"""Under the collector the user's script looks as it does alone: its traceback shows only its own frames,
its stdout and stderr stay apart on the terminal and on disk, and what it printed is on disk even if the
collector is killed. The collector's closing line on its in-process check (the shipped pack, checked by
default) follows the program's output."""
import os
import signal
import subprocess
import sys
import time

from conftest import collect

CLOSING = "traincheck-collect: online check: "


def _program_stderr(stderr: str) -> str:
    """What the program wrote on stderr: the collector's closing lines, after it, left out."""
    lines = stderr.splitlines(keepends=True)
    assert lines and lines[-1].startswith(CLOSING), stderr
    while lines and lines[-1].startswith(CLOSING):
        lines.pop()
    return "".join(lines)


FAILING = """import sys
print("to stdout")
print("to stderr", file=sys.stderr)

def inner():
    raise ValueError("bad value")

inner()
"""


def test_a_failing_script_shows_the_same_traceback_streams_and_exit_code_as_alone(tmp_path):
    script = tmp_path / "fails.py"
    script.write_text(FAILING)
    alone = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    under = collect(tmp_path, "-p", str(script), "--output-dir", "out")
    assert under.returncode == alone.returncode == 1
    assert under.stdout == alone.stdout == "to stdout\n"
    assert "to stderr\n" + alone.stderr.split("to stderr\n", 1)[1] in under.stderr
    assert "traincheck" not in _program_stderr(under.stderr).split("to stderr\n", 1)[1], under.stderr
    out = tmp_path / "out"
    assert (out / "program_stdout.txt").read_text() == "to stdout\n"
    assert (out / "program_stderr.txt").read_text() == alone.stderr
    merged = (out / "program_output.txt").read_text()
    assert "to stdout" in merged and "ValueError: bad value" in merged and "Program exited with code 1" in merged


def test_a_syntax_error_is_reported_as_python_reports_it(tmp_path):
    script = tmp_path / "broken.py"
    script.write_text("x = (1,\n")
    alone = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    under = collect(tmp_path, "-p", str(script), "--output-dir", "out")
    assert under.returncode == alone.returncode == 1
    assert "traincheck" not in _program_stderr(under.stderr) and "SyntaxError" in under.stderr, under.stderr


def test_output_is_on_disk_when_the_collector_is_killed(tmp_path):
    script = tmp_path / "slow.py"
    script.write_text("import time\nprint('first line', flush=True)\ntime.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-m", "traincheck.collect_trace", "-p", str(script), "--output-dir", "out"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    saved = tmp_path / "out" / "program_output.txt"
    deadline = time.time() + 60
    while time.time() < deadline and not (saved.exists() and "first line" in saved.read_text()):
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert "first line" in saved.read_text()
