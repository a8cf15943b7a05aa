"""Folders and files: an output folder another collect is writing, or one holding an
earlier run, is refused (--overwrite replaces the earlier run); results never land outside -o; an empty
input folder is an error; names reach the console escaped."""
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from conftest import all_records, collect, write_script

DATA = Path(__file__).parents[1] / "cpp" / "data" / "e2e"
INVARIANTS = DATA / "golden" / "invariants.json"
SCRIPT = "import torch\nx = torch.ones(3)\nfor _ in range({n}):\n    x = torch.relu(x)\n"


def relu_calls(out):
    return sum(1 for r in all_records(out) if r["function"].endswith("relu") and "(pre)" in r["type"])


def test_a_rerun_into_an_earlier_runs_folder_is_refused_unless_overwrite(tmp_path):
    write_script(tmp_path, "a.py", SCRIPT.format(n=3))
    write_script(tmp_path, "b.py", SCRIPT.format(n=5))
    assert collect(tmp_path, "-p", "a.py", "--output-dir", "out").returncode == 0
    (tmp_path / "out" / "my_notes.txt").write_text("kept")
    result = collect(tmp_path, "-p", "b.py", "--output-dir", "out")
    assert result.returncode == 2
    assert result.stderr.startswith(f"traincheck-collect: error: {tmp_path / 'out'} holds an earlier run's files (")
    assert "pass --overwrite" in result.stderr and len(result.stderr.splitlines()) == 1
    assert relu_calls(tmp_path / "out") == 3  # untouched
    result = collect(tmp_path, "-p", "b.py", "--output-dir", "out", "--overwrite")
    assert result.returncode == 0, result.stderr
    assert relu_calls(tmp_path / "out") == 5  # this run's traces only, never merged with the earlier ones
    assert (tmp_path / "out" / "my_notes.txt").read_text() == "kept"


def test_a_folder_another_collect_is_writing_is_refused_even_with_overwrite(tmp_path):
    write_script(tmp_path, "slow.py", "import os, time, torch\ntorch.ones(1)\nopen('started', 'w').close()\n"
                                      "while not os.path.exists('go'):\n    time.sleep(0.05)\n")
    first = subprocess.Popen([sys.executable, "-m", "traincheck.collect_trace", "-p", "slow.py", "--output-dir", "out"],
                             cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        while not (tmp_path / "out" / "started").exists():
            assert first.poll() is None, first.communicate()
            time.sleep(0.05)
        write_script(tmp_path, "other.py", SCRIPT.format(n=2))
        second = collect(tmp_path, "-p", "other.py", "--output-dir", "out", "--overwrite")
        assert second.returncode == 2
        assert f"{tmp_path / 'out'} is in use by another traincheck-collect (pid {first.pid})" in second.stderr, second.stderr
    finally:
        (tmp_path / "out" / "go").write_text("")
        first.communicate(timeout=120)
    assert first.returncode == 0
    assert relu_calls(tmp_path / "out") == 0  # the refused run wrote nothing there


def test_check_results_never_land_outside_the_output_folder(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(DATA / "buggy_run", run)
    (run / "sub").mkdir()
    result = subprocess.run(["traincheck-check", "-f", "..", "-i", str(INVARIANTS), "-o", "out"], cwd=run / "sub",
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert (run / "sub" / "out" / "run" / "failed.log").exists()
    written = {p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file()}
    outside = {p for p in written if not str(p).startswith("run/sub/out/") and p.parent != Path("run")}
    assert not outside, outside


def test_an_empty_input_folder_is_an_error_for_infer_and_check(tmp_path):
    (tmp_path / "empty").mkdir()
    for cmd in (["traincheck-infer", "-f", "empty", "-o", "inv.json"],
                ["traincheck-check", "-f", "empty", "-i", str(INVARIANTS), "-o", "out"]):
        result = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert result.returncode != 0, (cmd, result.stderr)
        assert "empty: no trace files in this folder" in result.stderr, result.stderr


def test_control_characters_in_names_are_escaped_on_the_console(tmp_path):
    name = "run\x1b[2J\x1b]0;pwned\x07"
    shutil.copytree(DATA / "buggy_run", tmp_path / name)
    result = subprocess.run(["traincheck-check", "-f", name, "-i", str(INVARIANTS), "-o", "out"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stderr and "\x07" not in result.stderr
    assert "run\\x1b[2J\\x1b]0;pwned\\x07" in result.stderr
