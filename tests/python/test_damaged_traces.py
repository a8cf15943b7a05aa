"""Damaged and incomplete traces (docs/formats.md §Damaged and incomplete traces): a damaged line or lines
a full disk kept from the trace never make a violation the intact trace does not have, and the offline
and the standalone online checks give the same verdicts and say the trace is incomplete."""
import json
import re
import resource
import signal
import shutil
import subprocess
import sys

import pytest

from conftest import SCRIPTS


def collect(tmp_path, name, preexec_fn=None):
    result = subprocess.run([sys.executable, "-m", "traincheck.collect_trace", "-p", str(SCRIPTS / "cnn_sgd.py"), "--no-pack",
                             "--output-dir", name, "--", "--iters", "6"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=600, preexec_fn=preexec_fn)
    assert result.returncode == 0, result.stderr[-3000:]
    return tmp_path / name


def check_both(tmp_path, trace, invariants, tag):
    offline = subprocess.run(["traincheck-check", "-f", str(trace), "-i", str(invariants), "-o", f"off_{tag}"], cwd=tmp_path,
                             capture_output=True, text=True, timeout=300)
    assert offline.returncode == 0, offline.stderr[-3000:]
    online = subprocess.run(["traincheck-onlinecheck", "-f", str(trace), "-i", str(invariants), "-o", f"on_{tag}",
                             "--exit-on-idle", "1"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert online.returncode == 0, online.stderr[-3000:]
    off_summary = json.loads((tmp_path / f"off_{tag}" / trace.name / "violations_summary.json").read_text())
    on_summary = json.loads((tmp_path / f"on_{tag}" / "violations_summary.json").read_text())
    return offline.stderr, off_summary, online.stdout + online.stderr, on_summary


def violated(summary):
    return sorted(row["display_name"] for row in summary["violations"])


@pytest.fixture(scope="module")
def good_run(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("damaged")
    good = collect(tmp_path, "good")
    test = collect(tmp_path, "test")
    infer = subprocess.run(["traincheck-infer", "-f", str(good), "-o", "inv.json"], cwd=tmp_path, capture_output=True,
                           text=True, timeout=300)
    assert infer.returncode == 0, infer.stderr[-2000:]
    return tmp_path, test, tmp_path / "inv.json"


def damage(trace, destination, pick, change):
    shutil.copytree(trace, destination)
    path = next(destination.glob("trace_API_*.log"))
    lines = path.read_bytes().split(b"\n")
    index = pick(lines)
    lines[index] = change(lines[index])
    path.write_bytes(b"\n".join(lines))
    return index + 1


def post_of_a_middle_optimizer_call(lines):
    posts = [i for i, line in enumerate(lines) if b'"function":"torch.optim.sgd.sgd"' in line and b"(post)" in line]
    return posts[len(posts) // 2]


@pytest.mark.parametrize("kind", ["cut_short", "not_utf8"])
def test_a_damaged_middle_line_adds_no_violation_and_both_checks_agree(good_run, kind):
    tmp_path, test, invariants = good_run
    _, intact, _, intact_online = check_both(tmp_path, test, invariants, f"intact_{kind}")
    change = (lambda line: line[:80]) if kind == "cut_short" else (lambda line: line.replace(b"torch.optim.sgd.sgd", b"torch.optim.\xff\xfe.sgd"))
    line = damage(test, tmp_path / f"dmg_{kind}", post_of_a_middle_optimizer_call, change)
    off_err, offline, on_out, online = check_both(tmp_path, tmp_path / f"dmg_{kind}", invariants, kind)
    assert violated(intact) == violated(intact_online) == []
    assert violated(offline) == violated(online) == [], (offline, online)
    assert offline["incomplete_trace"]["records_lost"] == online["incomplete_trace"]["records_lost"] == 1
    assert f":{line}:" in off_err and "checked on an incomplete trace: 1 record lost" in off_err
    assert "checked on an incomplete trace: 1 record lost" in on_out


def test_lines_a_full_disk_kept_out_are_placed_by_the_recorders_log_and_left_out_alike(good_run):
    tmp_path, _, invariants = good_run

    def limited():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (150_000, 150_000))

    trace = collect(tmp_path, "full_disk", preexec_fn=limited)
    log = next(trace.glob("traincheck_recorder_*.log")).read_text()
    places = re.findall(r"^lost_lines: (\d+) at (\d+) in (trace_\S+)$", log, re.M)
    assert places, log
    lost = sum(int(n) for n, _, _ in places)
    _, offline, on_out, online = check_both(tmp_path, trace, invariants, "full_disk")
    assert violated(offline) == violated(online) == [], (offline, online)
    assert offline["incomplete_trace"]["records_lost"] == online["incomplete_trace"]["records_lost"] == lost
    assert f"checked on an incomplete trace: {lost} records lost" in on_out
