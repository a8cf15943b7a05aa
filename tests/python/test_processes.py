"""Threads, DataLoader workers, signals and kills: every process and thread writes readable files."""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

from conftest import SCRIPTS, read_trace_files, write_script


def test_dataloader_workers_and_threads_write_their_own_files(tmp_path):
    write_script(
        tmp_path,
        "threads.py",
        textwrap.dedent(
            """
            import threading, torch
            def work():
                for _ in range(3):
                    torch.relu(torch.ones(4))
            t = threading.Thread(target=work)
            t.start(); t.join()
            torch.relu(torch.ones(2))
            """
        ),
    )
    result = subprocess.run(
        [sys.executable, "-m", "traincheck.collect_trace", "-p", "threads.py", "--output-dir", "out"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout
    files = read_trace_files(tmp_path / "out")
    relu_threads = {
        name for name, recs in files.items() if any(r["function"] == "torch._VariableFunctionsClass.relu" for r in recs)
    }
    assert len(relu_threads) == 2
    for name, recs in files.items():
        assert {(r["process_id"], r["thread_id"]) for r in recs} == {tuple(int(x) for x in name[len("trace_API_"):-4].split("_"))}

    result = subprocess.run(
        [sys.executable, "-m", "traincheck.collect_trace", "-p", str(SCRIPTS / "cnn_sgd.py"), "--output-dir", "out2",
         "--", "--iters", "4", "--workers", "2"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout
    files = read_trace_files(tmp_path / "out2")
    pids = {r["process_id"] for recs in files.values() for r in recs}
    assert len(pids) == 3  # the trainer and two workers
    worker_pids = {r["process_id"] for recs in files.values() for r in recs if r["function"] == "torch._VariableFunctionsClass.stack"}
    assert len(worker_pids) == 2  # each worker collated its own batches, into its own file


LONG_RUNNING = """
import os, sys, time, torch
for i in range(100000):
    torch.relu(torch.ones(3))
    if i == 200:
        print("ready", os.getpid(), flush=True)
    if i > 200:
        time.sleep(0.001)
"""


def _start_long_running(tmp_path, env_extra=None):
    write_script(tmp_path, "long.py", LONG_RUNNING)
    proc = subprocess.Popen(
        [sys.executable, "-m", "traincheck.collect_trace", "-p", "long.py", "--output-dir", "out"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, **(env_extra or {})},
        # Signals as in a terminal, whatever this test process inherited (an ignored SIGINT is inherited).
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    line = proc.stdout.readline()
    while line and not line.startswith("ready"):
        line = proc.stdout.readline()
    assert line.startswith("ready"), "the script never got going"
    return proc, int(line.split()[1])


def test_sigkill_leaves_every_written_line_parseable(tmp_path):
    proc, child = _start_long_running(tmp_path)
    time.sleep(0.5)
    os.kill(child, signal.SIGKILL)
    proc.wait(timeout=60)
    # Linux may cut a large write() short when SIGKILL arrives (page by page), so the last line of a file
    # can be torn; every line before it is whole, and the analyzers skip a torn last line with a warning.
    records = []
    for path in (tmp_path / "out").glob("trace_API_*.log"):
        lines = path.read_bytes().split(b"\n")
        for line in lines[:-1]:
            records.append(json.loads(line))  # raises if a line in the middle is torn
    relu_pre = [r for r in records if r["function"] == "torch._VariableFunctionsClass.relu" and r["type"] == "function_call (pre)"]
    assert len(relu_pre) > 200  # everything up to "ready" and most of the half second after it
    check = subprocess.run(["traincheck-infer", "-f", "out", "-o", "inv.json"], cwd=tmp_path, capture_output=True,
                           text=True, timeout=300)
    assert check.returncode == 0, check.stderr[-2000:]


def test_sigterm_flushes_everything_and_the_program_still_dies_of_sigterm(tmp_path):
    # A writer period far longer than the test: only the SIGTERM flush can have written the tail.
    proc, child = _start_long_running(tmp_path, {"TRAINCHECK_WRITER_PERIOD_MS": "600000"})
    os.kill(child, signal.SIGTERM)
    assert proc.wait(timeout=60) == 128 + signal.SIGTERM
    records = [r for recs in read_trace_files(tmp_path / "out").values() for r in recs]
    relu_pre = [r for r in records if r["function"] == "torch._VariableFunctionsClass.relu" and r["type"] == "function_call (pre)"]
    assert len(relu_pre) >= 201


def test_sigint_flushes_everything_through_keyboard_interrupt(tmp_path):
    proc, child = _start_long_running(tmp_path, {"TRAINCHECK_WRITER_PERIOD_MS": "600000"})
    os.kill(child, signal.SIGINT)
    assert proc.wait(timeout=60) == 128 + signal.SIGINT  # Python dies of SIGINT after KeyboardInterrupt
    records = [r for recs in read_trace_files(tmp_path / "out").values() for r in recs]
    relu_pre = [r for r in records if r["function"] == "torch._VariableFunctionsClass.relu" and r["type"] == "function_call (pre)"]
    assert len(relu_pre) >= 201
    assert "KeyboardInterrupt" in (tmp_path / "out" / "program_output.txt").read_text()
