import glob
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).parent / "scripts"


def collect(tmp_path: Path, *args: str, script_args=(), timeout=300, env=None) -> subprocess.CompletedProcess:
    """Runs traincheck-collect (as `python -m traincheck.collect_trace`) in tmp_path."""
    cmd = [sys.executable, "-m", "traincheck.collect_trace", *args]
    if script_args:
        cmd += ["--", *script_args]
    return subprocess.run(
        cmd, cwd=tmp_path, capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})}
    )


def read_trace_files(out_dir: Path, kind: str = "API") -> dict[str, list[dict]]:
    """Every complete JSON line of every trace file, by file name."""
    files = {}
    for path in sorted(glob.glob(str(out_dir / f"trace_{kind}_*.log"))):
        files[os.path.basename(path)] = [json.loads(line) for line in open(path) if line.strip()]
    return files


def all_records(out_dir: Path) -> list[dict]:
    return [r for records in read_trace_files(out_dir).values() for r in records]


def write_script(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def in_process_summaries(out_dir: Path) -> list[dict]:
    """The in-process check's summary of each process of a collect into `out_dir`; at least one, each
    having checked something."""
    summaries = [json.loads(Path(p).read_text()) for p in glob.glob(str(out_dir / "online_check" / "summary_*.json"))]
    assert summaries and all(s["checked"] > 0 for s in summaries), f"no in-process check summary in {out_dir}"
    return summaries


def violated_relations(summaries: list[dict]) -> set[str]:
    """The relations of the invariants the summaries found violated."""
    return {key.split("|")[0] for s in summaries for key in s["violated_invariants"]}


@pytest.fixture
def scripts_dir() -> Path:
    return SCRIPTS
