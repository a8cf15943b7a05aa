"""Processes a collected script starts with multiprocessing's spawn method (torch.multiprocessing.spawn, as the
PyTorch DDP tutorial starts its ranks) run under the tool as the script's own process does: each records its
own trace and checks in-process, with the script's output unchanged."""

import glob
import json
import subprocess
import sys
from pathlib import Path

from conftest import SCRIPTS, collect


def _run(tmp_path: Path, bug: str):
    out = tmp_path / bug
    proc = collect(tmp_path, "-p", str(SCRIPTS / "spawn_ranks.py"), "--output-dir", str(out), script_args=["--bug", bug])
    assert proc.returncode == 0, proc.stderr
    summaries = [json.loads(Path(p).read_text()) for p in glob.glob(str(out / "online_check" / "summary_*.json"))]
    return proc, out, summaries


def test_spawned_ranks_are_recorded_and_checked_with_the_scripts_output_unchanged(tmp_path):
    plain = subprocess.run([sys.executable, str(SCRIPTS / "spawn_ranks.py")], cwd=tmp_path, capture_output=True,
                           text=True, timeout=300)
    assert plain.returncode == 0, plain.stderr
    proc, out, summaries = _run(tmp_path, "none")
    assert [l for l in proc.stdout.splitlines() if l.startswith("epoch")] == plain.stdout.splitlines()
    var_files = glob.glob(str(out / "trace_VAR_*.log"))
    assert len({Path(f).name.split("_")[2] for f in var_files}) == 2  # each rank's parameter states, its own pid
    assert len(summaries) >= 2 and all(s["checked"] > 0 for s in summaries)
    assert all(not s["violated_invariants"] for s in summaries)


def test_a_bug_in_spawned_ranks_is_found_in_process(tmp_path):
    _, _, summaries = _run(tmp_path, "no_set_epoch")
    violated = {key.split("|")[0] for s in summaries for key in s["violated_invariants"]}
    assert violated == {"SamplerEpochAdvancesRelation"}
