"""No output file is written through a link: a symbolic link planted in an output folder under the name of a
file the tool writes (failed.log -> a file of the user's elsewhere) is refused with an error naming it, and
its target stays as it was. Each output file of traincheck-check, traincheck-onlinecheck, traincheck-infer
and traincheck-collect (its lock, its run files, the traces and the in-process check's files) is covered."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import collect
from test_online_check import INVARIANT

DATA = Path(__file__).parents[1] / "cpp" / "data" / "e2e"
INVARIANTS = DATA / "golden" / "invariants.json"
PRECIOUS = "precious: never to be overwritten\n"


def victim(tmp_path: Path) -> Path:
    path = tmp_path / "elsewhere" / "victim.txt"
    path.parent.mkdir(exist_ok=True)
    path.write_text(PRECIOUS)
    return path


def plant(link: Path, target: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, link)


CHECK_OUTPUTS = ["invariants.json", "report.html", "buggy_run/failed.log", "buggy_run/passed.log",
                 "buggy_run/not_triggered.log", "buggy_run/violations_summary.json"]


@pytest.mark.parametrize("name", CHECK_OUTPUTS)
def test_check_refuses_a_link_planted_under_each_output_name(tmp_path, name):
    target = victim(tmp_path)
    plant(tmp_path / "results" / name, target)
    result = subprocess.run(["traincheck-check", "-f", str(DATA / "buggy_run"), "-i", str(INVARIANTS), "-o", "results"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stderr
    assert f"results/{name}: is a symbolic link; refusing to write through it" in result.stderr, result.stderr
    assert target.read_text() == PRECIOUS
    assert (tmp_path / "results" / name).is_symlink()


def test_check_refuses_a_trace_results_folder_that_is_a_link(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    plant(tmp_path / "results" / "buggy_run", elsewhere)
    result = subprocess.run(["traincheck-check", "-f", str(DATA / "buggy_run"), "-i", str(INVARIANTS), "-o", "results"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stderr
    assert "results/buggy_run: is a symbolic link" in result.stderr, result.stderr
    assert not list(elsewhere.iterdir())


def test_check_names_a_results_folder_that_already_holds_files(tmp_path):
    args = ["traincheck-check", "-f", str(DATA / "buggy_run"), "-i", str(INVARIANTS), "-o", "results"]
    first = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    assert "already holds files" not in first.stderr
    (tmp_path / "results" / "notes.txt").write_text("mine")
    second = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stderr
    assert ("[check] warning: the results folder results already holds files (buggy_run, invariants.json, notes.txt, "
            "report.html): results of the same name replace them, the others stay") in second.stderr, second.stderr
    assert (tmp_path / "results" / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize("name", ["invariants.json", "failed.log", "report.html", "violations_summary.json"])
def test_onlinecheck_refuses_a_link_planted_under_each_output_name(tmp_path, name):
    target = victim(tmp_path)
    plant(tmp_path / "live" / name, target)
    result = subprocess.run(["traincheck-onlinecheck", "-f", str(DATA / "buggy_run"), "-i", str(INVARIANTS), "-o", "live",
                             "--exit-on-idle", "1"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stderr
    assert f"live/{name}: is a symbolic link; refusing to write through it" in result.stderr, result.stderr
    assert "warning: the results folder live already holds files" in result.stderr
    assert target.read_text() == PRECIOUS


@pytest.mark.parametrize("name", ["inv.json", "inv.json.failed"])
def test_infer_refuses_a_link_planted_under_its_output_names(tmp_path, name):
    target = victim(tmp_path)
    plant(tmp_path / name, target)
    result = subprocess.run(["traincheck-infer", "-f", str(DATA / "good_run1"), "-o", "inv.json"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode != 0, result.stderr
    assert f"{name}: is a symbolic link" in result.stderr, result.stderr
    assert target.read_text() == PRECIOUS


SCRIPT = "import torch\nx = torch.ones(3)\nfor _ in range(3):\n    x = torch.relu(x)\n"


def test_collect_refuses_a_link_planted_as_its_lock(tmp_path):
    target = victim(tmp_path)
    (tmp_path / "train.py").write_text(SCRIPT)
    plant(tmp_path / "out" / ".traincheck_collect.lock", target)
    result = collect(tmp_path, "-p", "train.py", "--output-dir", "out", "--overwrite")
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr == (f"traincheck-collect: error: {tmp_path / 'out' / '.traincheck_collect.lock'} is a symbolic "
                             "link; refusing to write through it (remove it, or give another --output-dir)\n")
    assert target.read_text() == PRECIOUS


RUN_FILES = ["trace_API_1_1.log", "program_output.txt", "program_stderr.txt", "env_dump.txt", "api_signatures.json",
             "instr_opts.json", "_traincheck_train.py", "instrumentation_summary_1.json", "online_check"]


def test_collect_refuses_links_planted_under_its_run_files_and_overwrite_removes_them_unfollowed(tmp_path):
    target = victim(tmp_path)
    (tmp_path / "train.py").write_text(SCRIPT)
    for name in RUN_FILES:
        plant(tmp_path / "out" / name, target)
    result = collect(tmp_path, "-p", "train.py", "--output-dir", "out")
    assert result.returncode == 2 and "holds an earlier run's files" in result.stderr, result.stderr
    result = collect(tmp_path, "-p", "train.py", "--output-dir", "out", "--overwrite")
    assert result.returncode == 0, result.stderr
    assert target.read_text() == PRECIOUS
    assert not [p for p in (tmp_path / "out").iterdir() if p.is_symlink()]


# Links planted while the program runs (its working directory is the output folder), after the folder was
# claimed: a trace file of a thread that has not recorded yet, and the in-process check's report.
RACING_SCRIPT = """
import os, threading
import torch
import torch.nn as nn

victim = os.environ["VICTIM"]
os.symlink(victim, os.path.join("online_check", "report.html"))

def work():  # a thread of its own: its trace file is opened at its first recorded call, after the link
    os.symlink(victim, f"trace_API_{os.getpid()}_{threading.get_ident()}.log")
    w = nn.Parameter(torch.ones(3))
    opt = torch.optim.Adam([w], lr=0.01)
    for _ in range(3):
        w.grad = torch.ones(3)
        opt.step()

thread = threading.Thread(target=work)
thread.start()
thread.join()
model = nn.Linear(4, 2)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
for i in range(3):
    optimizer.zero_grad()
    model(torch.randn(8, 4)).sum().backward()
    optimizer.step()
print("training finished", flush=True)
"""


def test_collect_refuses_links_planted_while_the_program_runs(tmp_path):
    target = victim(tmp_path)
    (tmp_path / "train.py").write_text(RACING_SCRIPT)
    (tmp_path / "inv.json").write_text(json.dumps(INVARIANT) + "\n")
    result = collect(tmp_path, "-p", "train.py", "-i", "inv.json", "--output-dir", "out",
                     env={"VICTIM": str(target)})
    assert result.returncode == 0, result.stdout + result.stderr
    assert "training finished" in result.stdout
    out = tmp_path / "out"
    assert target.read_text() == PRECIOUS
    refused_traces = [line for line in result.stderr.splitlines()
                      if line.startswith(f"traincheck: warning: {out}/trace_API_") and "is a symbolic link" in line]
    assert len(refused_traces) == 1, result.stderr
    assert f"{out / 'online_check' / 'report.html'}: is a symbolic link; refusing to write through it" in result.stderr
    # The check's summary is written all the same: the closing line has the check's totals.
    assert "online check: no violation of 1 checks" in result.stderr or "online check: 1 violations" in result.stderr, \
        result.stderr
    # The refused trace file's thread lost its records, the main thread's are there.
    assert [p for p in out.glob("trace_API_*.log") if not p.is_symlink()]


def test_collect_copy_all_files_refuses_a_link_planted_under_a_copied_name(tmp_path):
    target = victim(tmp_path)
    src = tmp_path / "src"
    src.mkdir()
    (src / "train.py").write_text(SCRIPT)
    (src / "notes.txt").write_text("the user's")
    plant(tmp_path / "out" / "notes.txt", target)
    result = collect(tmp_path, "-p", "src/train.py", "--output-dir", "out", "--copy-all-files")
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"{tmp_path / 'out' / 'notes.txt'} is a symbolic link; refusing to write through it" in result.stderr
    assert "Traceback" not in result.stderr
    assert target.read_text() == PRECIOUS


def test_the_collectors_writer_refuses_links_in_every_mode_and_leaves_their_targets(tmp_path):
    from traincheck import output_files

    target = victim(tmp_path)
    out = tmp_path / "out"
    plant(out / "linked", target)
    os.link(target, out / "hard")
    for name in ("linked", "hard"):
        for mode in ("w", "wb", "a", "ab"):
            with pytest.raises(output_files.OutputRefused, match=f"{out / name} (is a symbolic link|has other hard links)"):
                output_files.open_output(str(out / name), mode)
    with pytest.raises(output_files.OutputRefused):
        output_files.replace_output(str(out / "linked"), "x")
    with pytest.raises(OSError):
        output_files.copy_file(str(target), str(out / "linked"))
    assert target.read_text() == PRECIOUS
    assert (out / "linked").is_symlink()
    output_files.replace_output(str(out / "plain.json"), "{}")
    with output_files.open_output(str(out / "plain.json"), "a") as f:
        f.write("\n")
    assert (out / "plain.json").read_text() == "{}\n"
    assert sorted(p.name for p in out.iterdir()) == ["hard", "linked", "plain.json"]  # no temporary left


def test_collect_refuses_a_hard_linked_lock(tmp_path):
    target = victim(tmp_path)
    (tmp_path / "train.py").write_text(SCRIPT)
    (tmp_path / "out").mkdir()
    os.link(target, tmp_path / "out" / ".traincheck_collect.lock")
    result = collect(tmp_path, "-p", "train.py", "--output-dir", "out")
    assert result.returncode == 2 and "has other hard links" in result.stderr, result.stderr
    assert target.read_text() == PRECIOUS


def test_collect_copy_all_files_refuses_a_link_planted_as_a_copied_folder(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    src = tmp_path / "src"
    (src / "data" / "inner").mkdir(parents=True)
    (src / "train.py").write_text(SCRIPT)
    (src / "data" / "inner" / "x.csv").write_text("1,2\n")
    plant(tmp_path / "out" / "data" / "inner", elsewhere)
    result = collect(tmp_path, "-p", "src/train.py", "--output-dir", "out", "--copy-all-files")
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"{tmp_path / 'out' / 'data' / 'inner'} is a symbolic link; refusing to write through it" in result.stderr
    assert not list(elsewhere.iterdir())
