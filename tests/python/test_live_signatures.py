"""A live check agrees with an offline one: api_signatures.json is written before the
script runs, not at exit, so traincheck-onlinecheck following a running collect, a run killed by SIGTERM
and a run ended by os._exit all leave it; os._exit no longer loses the last writer period of records."""
import json
import os
import signal
import subprocess
import sys
import time

from conftest import all_records, collect, write_script


def test_signatures_are_written_before_the_script_runs(tmp_path):
    write_script(tmp_path, "train.py", "\n".join([
        "import json, os, torch",
        "path = os.path.join(os.environ['TRAINCHECK_OUTPUT_DIR'], 'api_signatures.json')",
        "sigs = json.load(open(path)) if os.path.exists(path) else {}",
        "print('at start:', len(sigs), 'has relu:', 'torch.nn.functional.relu' in sigs)",
        "torch.nn.functional.relu(torch.ones(2, 2))",
    ]) + "\n")
    result = collect(tmp_path, "-p", "train.py", "--output-dir", "out")
    assert result.returncode == 0, result.stderr
    line = next(l for l in result.stdout.splitlines() if l.startswith("at start:"))
    assert int(line.split()[2]) > 100 and line.endswith("has relu: True"), line
    assert not list((tmp_path / "out").glob("api_signatures.json.*.tmp"))


def test_os_exit_flushes_the_trace_and_leaves_the_signatures(tmp_path):
    # A short script ended by os._exit (a scheduler's timeout handler) wrote no trace at all.
    write_script(tmp_path, "train.py", "import os, torch\nfor _ in range(50):\n    torch.relu(torch.ones(3))\nos._exit(3)\n")
    result = collect(tmp_path, "-p", "train.py", "--output-dir", "out", env={"TRAINCHECK_WRITER_PERIOD_MS": "60000"})
    assert result.returncode == 3, result.stderr
    sums = [r for r in all_records(tmp_path / "out") if r["function"].endswith(".relu") and "(post)" in r["type"]]
    assert len(sums) == 50
    assert (tmp_path / "out" / "api_signatures.json").exists()


def test_a_run_ended_by_sigterm_leaves_its_records_and_signatures(tmp_path):
    write_script(tmp_path, "train.py", "\n".join([
        "import time, torch",
        "for _ in range(20):",
        "    torch.relu(torch.ones(3))",
        "open('ready', 'w').close()",
        "time.sleep(600)",
    ]) + "\n")
    proc = subprocess.Popen([sys.executable, "-m", "traincheck.collect_trace", "-p", "train.py", "--output-dir", "out"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "TRAINCHECK_WRITER_PERIOD_MS": "60000"})
    while not (tmp_path / "out" / "ready").exists():
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)  # forwarded to the program's process group
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, err
    sums = [r for r in all_records(tmp_path / "out") if r["function"].endswith(".relu") and "(post)" in r["type"]]
    assert len(sums) == 20
    sigs = json.loads((tmp_path / "out" / "api_signatures.json").read_text())
    assert "torch.nn.functional.relu" in sigs


def test_processes_merge_their_signatures_under_a_lock(tmp_path):
    from traincheck.instrument.signatures import publish_signatures

    publish_signatures({"a.f": {"params": [{"name": "x", "kind": "POSITIONAL_OR_KEYWORD"}]}}, str(tmp_path))
    publish_signatures({"b.g": {"params": []}}, str(tmp_path))
    mtime = (tmp_path / "api_signatures.json").stat().st_mtime_ns
    publish_signatures({"b.g": {"params": []}}, str(tmp_path))  # nothing new: not rewritten
    assert (tmp_path / "api_signatures.json").stat().st_mtime_ns == mtime
    assert set(json.loads((tmp_path / "api_signatures.json").read_text())) == {"a.f", "b.g"}


def test_a_process_publishing_again_keeps_what_another_process_wrote_in_between(tmp_path):
    """This process does not re-read a file it wrote itself, but does read one another process replaced."""
    from traincheck.instrument.signatures import publish_signatures

    path = tmp_path / "api_signatures.json"
    publish_signatures({"a.f": {"params": []}}, str(tmp_path))
    other = json.loads(path.read_text())
    other["c.h"] = {"params": []}
    (tmp_path / "other.tmp").write_text(json.dumps(other))
    os.replace(tmp_path / "other.tmp", path)  # as another process's publish does
    publish_signatures({"b.g": {"params": []}}, str(tmp_path))
    assert set(json.loads(path.read_text())) == {"a.f", "b.g", "c.h"}
