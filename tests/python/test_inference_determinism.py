"""Same program, same inputs: the same invariants, byte for byte, however often it is collected again.

Run-varying details of a trace (memory addresses reused by chance, timings) must never decide what is
learned: one case of the detection suite once gave a DistinctArgument invariant in one repetition and not
in the next, because two inputs happened to share a freed address."""
import subprocess
from pathlib import Path

from conftest import collect

REPO = Path(__file__).resolve().parents[2]
CASE = REPO / "eval" / "detection" / "cases" / "autocast_rope_bf16" / "main.py"


def infer(tmp_path: Path, folders: list[Path], out: Path) -> bytes:
    proc = subprocess.run(["traincheck-infer", "-f", *map(str, folders), "-o", str(out)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return out.read_bytes()


def test_invariants_of_two_collections_of_the_same_runs_are_identical(tmp_path):
    files = []
    for rep in ("a", "b"):
        folders = []
        for seed in ("1", "2"):
            out = tmp_path / f"{rep}{seed}"
            proc = collect(tmp_path, "-p", str(CASE), "--output-dir", str(out), script_args=["--seed", seed],
                           env={"OMP_NUM_THREADS": "1"})
            assert proc.returncode == 0, proc.stderr[-2000:]
            folders.append(out)
        files.append(infer(tmp_path, folders, tmp_path / f"inv_{rep}.json"))
    assert files[0].count(b"\n") > 100
    assert files[0] == files[1]
