"""The recorder never makes the training's memory grow (docs/collection.md §Memory).

A no_grad loop with 25 MB logits, the seed Transformer's evaluation, grew by ~50 MB per step under full
collection until it was OOM-killed, while the plain script stays flat: the resident size of the collected
run must stay within 1.10x of the plain run's plus the recorder's budget. Whether that loop fragments
glibc's heap at all depends on the process's whole allocation history, so the growth itself is tested
on a program that fragments the heap deterministically (fragmenting_heap.py).
"""

import subprocess
import sys

from conftest import SCRIPTS, collect

SCRIPT = SCRIPTS / "large_logits_eval.py"
STEPS = 60
BUDGET_MB = 160  # docs/collection.md §Memory


def rss_series(stdout: str) -> list[int]:
    return [int(line.split()[1]) for line in stdout.splitlines() if line.startswith("rss ")]


def test_full_collection_keeps_the_plain_runs_memory(tmp_path):
    plain = subprocess.run([sys.executable, str(SCRIPT), str(STEPS)], capture_output=True, text=True, timeout=600)
    assert plain.returncode == 0, plain.stderr
    plain_rss = rss_series(plain.stdout)
    assert len(plain_rss) == STEPS

    run = collect(tmp_path, "-p", str(SCRIPT), "--output-dir", "out", script_args=[str(STEPS)], timeout=900)
    assert run.returncode == 0, run.stderr
    traced_rss = rss_series(run.stdout)
    assert len(traced_rss) == STEPS
    assert max(traced_rss) <= 1.10 * max(plain_rss) + BUDGET_MB, (max(plain_rss), traced_rss)


def last_third_growth(series: list[int]) -> int:
    third = len(series) // 3
    return max(series[-third:]) - max(series[:third])


def test_recorder_hands_back_a_fragmented_heap(tmp_path):
    """A program that fragments glibc's heap by itself grows 25 MiB per step; under collect the writer's
    heap reclaim holds it within one reclaim step. With the reclaim off it grows as the plain program."""
    script = SCRIPTS / "fragmenting_heap.py"
    plain = subprocess.run([sys.executable, str(script), str(STEPS)], capture_output=True, text=True, timeout=600)
    assert plain.returncode == 0, plain.stderr
    assert last_third_growth(rss_series(plain.stdout)) >= 20 * 25  # the pattern does fragment here

    run = collect(tmp_path, "-p", str(script), "--output-dir", "on", script_args=[str(STEPS)])
    assert run.returncode == 0, run.stderr
    series = rss_series(run.stdout)
    assert len(series) == STEPS
    assert last_third_growth(series) <= 64 + 4 * 25, series

    off = collect(tmp_path, "-p", str(script), "--output-dir", "off", script_args=[str(STEPS)],
                  env={"TRAINCHECK_HEAP_RECLAIM_MB": "0"})
    assert off.returncode == 0, off.stderr
    assert last_third_growth(rss_series(off.stdout)) >= 20 * 25


def test_heap_reclaim_setting_is_validated(tmp_path):
    run = collect(tmp_path, "-p", str(SCRIPT), "--output-dir", "out", script_args=["1"],
                  env={"TRAINCHECK_HEAP_RECLAIM_MB": "lots"})
    assert run.returncode != 0
    assert "TRAINCHECK_HEAP_RECLAIM_MB" in run.stderr
    assert "Traceback" not in run.stderr
