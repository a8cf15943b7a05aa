"""The detection evaluation's harness (eval/detection): case discovery, reading results, verdicts,
training-set splits and tables, on tiny fixtures; and one fast case end to end."""

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from eval.detection import layout as L  # noqa: E402
from eval.detection.cases import CaseError, discover, load_case  # noqa: E402
from eval.detection.metrics import (  # noqa: E402
    ResultsError, ViolatedInvariant, iter_json_objects, read_failed_log, verdict, violation_step)
from eval.detection.report import case_table, differs, summarize  # noqa: E402
from eval.detection.results import DetectionRow  # noqa: E402

FIXTURE_CASES = Path(__file__).parent / "fixtures" / "detection_cases"


def make_case(root: Path, name: str, yml: str, run_sh: bool = False) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "main.py").write_text("print('hi')\n")
    (folder / "case.yml").write_text(yml)
    if run_sh:
        (folder / "run.sh").write_text("torchrun --standalone --nproc_per_node 2 main.py \"$@\"\n")
    return folder


# ------------------------------------------------------------------------------------------ discovery

def test_discover_reads_every_case_sorted_with_defaults(tmp_path):
    make_case(tmp_path, "b_case", "description: d\nbug_class: c\ntrigger_step: 3\n")
    make_case(tmp_path, "a_case", "description: d\nbug_class: c\ntrigger_step: 1\nlauncher: torchrun\n"
                                  "models_to_track: [model]\nargs: ['--x', 2]\n", run_sh=True)
    cases = discover(tmp_path)
    assert [c.name for c in cases] == ["a_case", "b_case"]
    a, b = cases
    assert a.shell_launcher == tmp_path / "a_case" / "run.sh" and a.models_to_track == ("model",)
    assert a.args == ("--x", "2")
    assert b.launcher == "python" and b.shell_launcher is None and b.trigger_step == 3


@pytest.mark.parametrize("yml, message", [
    ("bug_class: c\ntrigger_step: 3\n", "field 'description' is missing"),
    ("description: d\nbug_class: c\ntrigger_step: three\n", "field 'trigger_step' must be int"),
    ("description: d\nbug_class: c\ntrigger_step: -1\n", "must be >= 0"),
    ("description: d\nbug_class: c\ntrigger_step: 2\nlauncher: mpirun\n", "field 'launcher' must be one of"),
    ("description: d\nbug_class: c\ntrigger_step: 2\ncolour: red\n", "unknown field(s) colour"),
    ("description: d\nbug_class: c\ntrigger_step: 2\nlauncher: torchrun\n", "run.sh is missing"),
    ("- a list\n", "expected a mapping"),
])
def test_a_malformed_case_file_names_the_file_and_the_field(tmp_path, yml, message):
    folder = make_case(tmp_path, "bad", yml)
    with pytest.raises(CaseError) as err:
        load_case(folder)
    assert str(folder / "case.yml") in str(err.value) or str(folder) in str(err.value)
    assert message in str(err.value)


def test_unknown_case_names_are_an_error(tmp_path):
    make_case(tmp_path, "one", "description: d\nbug_class: c\ntrigger_step: 3\n")
    with pytest.raises(CaseError, match="unknown case"):
        discover(tmp_path, ["two"])


def test_the_suite_has_a_valid_case_per_bug_class():
    cases = discover()
    assert len(cases) >= 16
    assert len({c.bug_class for c in cases}) >= 16


# ------------------------------------------------------------------------------------------ results

def result(text, steps_and_times, detection_time=None):
    trace = [{"function": "f", "meta_vars.step": s, "time": t} for s, t in steps_and_times]
    out = {"invariant": {"relation": "R", "params": [{"p": text}], "text_description": text},
           "check_passed": False, "trace": trace}
    if detection_time is not None:
        out["detection_time"] = detection_time
    return out


def test_results_are_read_in_both_layouts_and_nan(tmp_path):
    indented = tmp_path / "indented.log"
    indented.write_text(json.dumps(result("a", [(1, 10)]), indent=4) + "\n" +
                        json.dumps(result("b", [(2, 20)]), indent=4).replace('"time": 20', '"time": NaN') + "\n")
    lines = tmp_path / "lines.log"
    lines.write_text(json.dumps(result("a", [(1, 10)])) + "\n" + json.dumps(result("a", [(5, 50)])) + "\n")
    assert sorted(v.text for v in read_failed_log(indented).values()) == ["a", "b"]
    by_lines = read_failed_log(lines)
    assert len(by_lines) == 1 and list(by_lines.values())[0].steps == [1, 5]
    assert read_failed_log(tmp_path / "missing.log") == {}


def test_a_partial_last_object_is_ignored_but_garbage_in_the_middle_is_an_error(tmp_path):
    growing = tmp_path / "growing.log"
    growing.write_text(json.dumps(result("a", [(1, 10)])) + "\n" + '{"invariant": {"rel')
    assert len(read_failed_log(growing)) == 1
    broken = tmp_path / "broken.log"
    broken.write_text(json.dumps(result("a", [(1, 10)])) + "\n{oops\n" + json.dumps(result("b", [(1, 10)])) + "\n")
    with pytest.raises(ResultsError, match=r"broken.log:2"):
        read_failed_log(broken)


def test_violation_step_is_the_step_of_the_first_violations_latest_record():
    # Our checker appends later violations' records; detection_time marks the first violation's latest one.
    r = result("a", [(4, 40), (3, 30), (8, 80), (7, 70)], detection_time=40)
    assert violation_step(r) == 4
    assert violation_step(result("a", [(4, 40), (3, 30)])) == 4   # no detection time: the largest step
    assert violation_step(result("a", [])) is None


def viol(text, *steps):
    return {text: ViolatedInvariant(text, "R", text, list(steps))}


def test_verdict_ignores_invariants_the_good_run_violates_and_steps_before_the_trigger():
    bug = {**viol("noisy", 5), **viol("early", 2), **viol("late", 9), **viol("real", 6, 7)}
    good = viol("noisy", 3)
    v = verdict(bug, good, trigger_step=5)
    assert v.detected and v.first_step == 6 and v.latency == 1 and v.caught_by == "real"
    assert (v.violated_on_bug, v.violated_on_good) == (4, 1)
    assert not verdict(viol("early", 2), {}, trigger_step=5).detected
    assert not verdict(viol("noisy", 7), viol("noisy", 1), trigger_step=5).detected


def test_verdict_breaks_ties_by_description():
    v = verdict({**viol("b", 6), **viol("a", 6)}, {}, trigger_step=6)
    assert v.caught_by == "a" and v.latency == 0


# ------------------------------------------------------------------------------------------ splits

def programs(n):
    return [L.Program(f"case:p{i}", Path(f"/t/p{i}"), Path(f"/c/p{i}")) for i in range(n)]


def test_fp_split_is_fixed_disjoint_and_nested():
    a = L.fp_split(programs(20), (1, 4, 6), 12)
    b = L.fp_split(list(reversed(programs(20))), (6, 1, 4), 12)
    assert a == b
    assert len(a.train) == 6 and len(a.check) == 12
    assert not {p.name for p in a.train} & {p.name for p in a.check}
    with pytest.raises(ValueError):
        L.fp_split(programs(6), (1, 6), 3)


def test_transfer_training_never_holds_the_case_itself(tmp_path):
    for name in ("a", "b", "c", "d", "e"):
        make_case(tmp_path, name, "description: d\nbug_class: c\ntrigger_step: 1\n")
    cases = discover(tmp_path)
    lay = L.RepLayout(tmp_path / "rep1")
    for folds in (2, 3):
        for case in cases:
            fold = L.transfer_fold(cases, case, folds)
            training = L.transfer_training(lay, cases, ["mnist"], fold, folds)
            assert lay.run(case, "good_s1") not in training
            assert lay.workload_run("mnist") in training
            assert len(training) > 1


# ------------------------------------------------------------------------------------------ tables

def row(rep, case="c", detected=True, latency=0, tool="ours", mode="offline", setting="same", good=0):
    return DetectionRow(rep, case, "cls", setting, tool, mode, "ok", invariants=100, detected=detected,
                        trigger_step=3, first_step=3 + (latency or 0), latency=latency if detected else None,
                        violated_on_bug=5, violated_on_good=good)


def test_a_verdict_that_changes_between_repetitions_is_marked():
    assert not differs([row(1), row(2)])
    assert differs([row(1), row(2, detected=False)])
    assert differs([row(1), row(2, good=3)])
    table = case_table([row(1), row(2, detected=False), row(1, case="d"), row(2, case="d")])
    lines = {line.split("|")[1].strip(): line for line in table.splitlines()[2:]}
    assert "≠" in lines["c"] and "≠" not in lines["d"]


def test_summary_counts_recall_latency_and_fp_rate():
    rows = [row(1, "a", latency=2), row(1, "b", detected=False, good=1), row(1, "c", latency=4)]
    [s] = summarize(rows)
    assert (s.detected, s.cases, s.median_latency) == (2, 3, 3)
    assert s.fp_rate_good == pytest.approx((0 + 0.01 + 0) / 3)


# ------------------------------------------------------------------------------------------ end to end

def test_one_fast_case_runs_end_to_end(tmp_path):
    """The fixture case (zero_grad skipped from step 4) through every phase with our tools: traces,
    invariants, offline and in-process checks, the false-positive experiment and the report."""
    out = tmp_path / "res"
    cmd = [sys.executable, "-m", "eval.detection.run", "--cases-dir", str(FIXTURE_CASES), "--out", str(out),
           "--workloads", "mnist", "--workload-iters", "2", "--fp-train-sizes", "1", "--fp-check-count", "1"]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (out / "report.md").exists() and (out / "fp_rate.png").exists()
    rows = list(csv.DictReader(open(out / "detection.csv")))
    by = {(r["setting"], r["mode"]): r for r in rows}
    assert set(by) == {(s, m) for s in ("same", "transfer", "pack") for m in ("offline", "in-process")}
    assert all(r["status"] == "ok" for r in rows), rows
    # The pack setting checks against the shipped pack as it is: no inference.
    from traincheck.invariant_sources import resolve
    shipped = sum(1 for line in open(resolve("pack:default")) if line.strip())
    assert int(by[("pack", "offline")]["invariants"]) == int(by[("pack", "in-process")]["invariants"]) == shipped
    assert by[("pack", "offline")]["invariant_file"] == "pack/default"
    same = by[("same", "offline")]
    assert same["detected"] == "True" and int(same["first_step"]) >= 4
    fp = list(csv.DictReader(open(out / "fp.csv")))
    assert len(fp) == 1 and fp[0]["status"] == "ok" and int(fp[0]["invariants"]) > 0
    assert "## Summary" in (out / "report.md").read_text()

    # --rerun-ours: our analyzer runs again on the same traces; nothing is collected again.
    traces = sorted((out / "rep1" / "traces").rglob("trace_*"))
    invariants = sorted((out / "rep1" / "invariants").rglob("*.json*"))
    assert traces and invariants
    trace_times = [t.stat().st_mtime_ns for t in traces]
    inv_times = [i.stat().st_mtime_ns for i in invariants]
    proc = subprocess.run(cmd + ["--rerun-ours", "--no-in-process"], cwd=REPO, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert [t.stat().st_mtime_ns for t in traces] == trace_times
    assert [i.stat().st_mtime_ns for i in invariants if i.exists()] != inv_times
    rerun = {(r["setting"], r["mode"]): r for r in csv.DictReader(open(out / "detection.csv"))}
    assert rerun[("same", "offline")]["detected"] == "True"
    assert "rep 1/1 collect" not in proc.stderr
    assert "Ours re-run on the traces" in (out / "report.md").read_text()


def test_rows_of_runs_split_over_several_invocations_are_numbered_one_after_another(tmp_path):
    from eval.detection.run import ROWS_FILE, merge_rows, save_rows
    from eval.detection.results import FpRow
    for name, reps in (("a", [1]), ("b", [1, 2])):
        (tmp_path / name).mkdir()
        save_rows(tmp_path / name / ROWS_FILE, [row(r, case="c") for r in reps],
                  [FpRow(r, "ours", 1, "p", "ok", 10, 0, 0.0) for r in reps], f"setup {name}")
    det, fp, setup = merge_rows([tmp_path / "a", tmp_path / "b"])
    assert sorted(r.rep for r in det) == [1, 2, 3] and sorted(r.rep for r in fp) == [1, 2, 3]
    assert "Repetitions 1: setup a" in setup and "Repetitions 2, 3: setup b" in setup


def test_peer_no_fp_gives_the_original_no_fp_rows_rather_than_failed_ones(tmp_path):
    from eval.detection.jobs import Job
    from eval.detection.pipeline import Options, RepJobs
    from eval.detection.results import fp_rows
    from eval.detection.tools import OURS, PEER, Analyzer
    for name in ("a", "b", "c", "d"):
        make_case(tmp_path / "cases", name, "description: d\nbug_class: c\ntrigger_step: 1\n")
    cases = discover(tmp_path / "cases")
    opts = Options(out=tmp_path, cases=cases, workloads=[], analyzers=[Analyzer(OURS, None), Analyzer(PEER, tmp_path)],
                   fp_train_sizes=(1,), fp_check_count=2, peer_fp=False)
    failed = Job("ours infer fp k1", ["x"], tmp_path / "log", tmp_path, 1.0, status="failed", returncode=1, seconds=1.0)
    rows = fp_rows(opts, 1, L.RepLayout(tmp_path / "rep1"), RepJobs(infer={(OURS, "fp", "k1"): failed}))
    assert [r.tool for r in rows] == [OURS, OURS]
    assert all(r.status == "infer: failed" for r in rows)


def test_the_pack_setting_alone_collects_only_the_checked_runs_and_is_ours_only(tmp_path):
    from eval.detection.pipeline import Options, case_invariant_key, runs_to_collect, tool_runs_setting
    from eval.detection.tools import OURS, PEER
    make_case(tmp_path / "cases", "a", "description: d\nbug_class: c\ntrigger_step: 1\n")
    cases = discover(tmp_path / "cases")
    pack_only = Options(out=tmp_path, cases=cases, workloads=[], analyzers=[], settings=("pack",), fp_train_sizes=())
    assert sorted(runs_to_collect(pack_only)) == ["bug_s3", "good_s3"]
    assert case_invariant_key(pack_only, "pack", cases[0]) == "default"
    # Inference needs the good runs of seeds 1 and 2; the FP experiment every program's first run.
    assert len(runs_to_collect(Options(out=tmp_path, cases=cases, workloads=[], analyzers=[], settings=("pack", "same"),
                                       fp_train_sizes=()))) == 4
    assert len(runs_to_collect(Options(out=tmp_path, cases=cases, workloads=[], analyzers=[], settings=("pack",)))) == 4
    assert tool_runs_setting(OURS, "pack") and not tool_runs_setting(PEER, "pack") and tool_runs_setting(PEER, "same")
