"""Run-level metrics of the detection evaluation (eval/detection/run_level.py): each run judged on its own
alarms, on small synthetic result rows; and their place in summary.csv and report.md."""

import csv
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from eval.detection.report import summarize, summarize_fp, write_report  # noqa: E402
from eval.detection.results import DetectionRow, FpRow  # noqa: E402
from eval.detection.run_level import fp_run_level, run_level  # noqa: E402


def row(case, bug, good, detected, setting="transfer", tool="ours", mode="offline", status="ok", rep=1):
    """One case's verdict: `bug` and `good` invariants violated on the buggy run and on its correct twin."""
    return DetectionRow(rep, case, "cls", setting, tool, mode, status, invariants=1000, detected=detected,
                        trigger_step=3, first_step=3 if detected else None, latency=0 if detected else None,
                        violated_on_bug=bug, violated_on_good=good)


# Five cases as transfer sees them today: correct runs alarm, and recall counts differences from the twin.
TRANSFER_LIKE = [
    row("a", bug=50, good=43, detected=True),    # more alarms than its twin: recall counts it, a user cannot
    row("b", bug=43, good=43, detected=False),   # the same alarms as its twin
    row("c", bug=7, good=0, detected=True),      # the only clean catch
    row("d", bug=0, good=0, detected=False),     # silent both
    row("e", bug=60, good=40, detected=True),
]


def test_correct_and_buggy_runs_with_an_alarm_are_counted_run_by_run():
    rl = run_level(TRANSFER_LIKE)
    assert rl.correct_alarming == 3          # a, b, e
    assert rl.buggy_alarming == 4            # a, b, c, e


def test_clean_catches_differ_from_recall_when_correct_runs_alarm():
    rl = run_level(TRANSFER_LIKE)
    recall = sum(1 for r in TRANSFER_LIKE if r.detected)
    assert recall == 3
    assert rl.clean_catches == 1 and rl.clean_catches_after_trigger == 1   # only c: a's and e's twins alarm


def test_a_clean_catch_needs_a_silent_twin_and_its_trigger_count_needs_a_late_alarm():
    # An alarm only before the trigger step (the verdict does not detect it) is still a clean catch at run
    # level, but not one at or after the trigger.
    rows = [row("early", bug=5, good=0, detected=False), row("late", bug=2, good=0, detected=True),
            row("noisy_twin", bug=9, good=1, detected=True)]
    rl = run_level(rows)
    assert (rl.clean_catches, rl.clean_catches_after_trigger) == (2, 1)


def test_median_alarms_on_a_correct_run():
    assert run_level(TRANSFER_LIKE).median_alarms_correct == 40          # of 43, 43, 0, 0, 40
    assert run_level(TRANSFER_LIKE[:4]).median_alarms_correct == 21.5   # of 43, 43, 0, 0
    assert run_level([]).median_alarms_correct is None


def test_rows_that_did_not_finish_count_nowhere():
    rows = [row("a", bug=3, good=0, detected=True),
            DetectionRow(1, "b", "cls", "same", "ours", "offline", "check: time limit", invariants=1000)]
    rl = run_level(rows)
    assert (rl.correct_alarming, rl.buggy_alarming, rl.clean_catches, rl.median_alarms_correct) == (0, 1, 1, 0)


def test_summary_carries_the_run_level_metrics_per_setting_tool_and_check_from_the_first_repetition():
    rows = (TRANSFER_LIKE
            + [row(r.case, 0, 0, False, rep=2) for r in TRANSFER_LIKE]            # a later repetition: ignored
            + [row("a", 4, 0, True, setting="same"), row("b", 0, 0, False, setting="same")]
            + [row("a", 9, 9, False, tool="original"), row("b", 1, 0, True, tool="original")])
    by = {(s.setting, s.tool, s.mode): s for s in summarize(rows)}
    t = by[("transfer", "ours", "offline")]
    assert (t.correct_alarming, t.buggy_alarming, t.clean_catches, t.median_alarms_correct, t.detected) == (3, 4, 1, 40, 3)
    s = by[("same", "ours", "offline")]
    assert (s.correct_alarming, s.buggy_alarming, s.clean_catches, s.median_alarms_correct) == (0, 1, 1, 0)
    o = by[("transfer", "original", "offline")]
    assert (o.correct_alarming, o.buggy_alarming, o.clean_catches, o.median_alarms_correct) == (1, 2, 1, 4.5)


def test_fp_experiment_counts_programs_with_an_alarm_and_their_median():
    rows = [FpRow(1, "ours", 6, "p1", "ok", 100, 0, 0.0), FpRow(1, "ours", 6, "p2", "ok", 100, 3, 0.03),
            FpRow(1, "ours", 6, "p3", "ok", 100, 8, 0.08), FpRow(1, "ours", 6, "p4", "check: failed")]
    fr = fp_run_level(rows)
    assert (fr.programs_alarming, fr.median_alarms) == (2, 3)
    [s] = summarize_fp(rows)
    assert (s.programs_alarming, s.median_alarms, s.programs, s.not_finished) == (2, 3, 4, 1)


def test_report_and_summary_csv_put_the_run_level_columns_first(tmp_path):
    write_report(tmp_path, TRANSFER_LIKE, [FpRow(1, "ours", 1, "p1", "ok", 100, 3, 0.03)], "setup\n")
    text = (tmp_path / "report.md").read_text()
    assert text.index("## Summary: run by run") < text.index("## Summary: against the twin good run")
    headline = text.split("## Summary: run by run")[1].split("\n\n")[0]
    assert "| ours | offline | transfer | 3/5 | 4/5 | 1/5 (1) | 40 | 3/5 |" in headline
    [summary] = list(csv.DictReader(open(tmp_path / "summary.csv")))
    assert (summary["correct_alarming"], summary["buggy_alarming"], summary["clean_catches"],
            summary["clean_catches_after_trigger"], summary["median_alarms_correct"]) == ("3", "4", "1", "1", "40")
    assert "| ours | 1 | 1 | 1/1 | 3 |" in text


@pytest.mark.parametrize("bug, good, expected", [(0, 0, 0), (1, 0, 1), (1, 1, 0), (0, 1, 0)])
def test_clean_catch_truth_table(bug, good, expected):
    assert run_level([row("x", bug=bug, good=good, detected=bug > 0 and good == 0)]).clean_catches == expected


def test_a_landed_results_folder_rebuilds_the_same_rows_from_its_csv_files(tmp_path):
    from eval.detection.run import load_csv_rows, main
    fp = [FpRow(1, "ours", 1, "p1", "ok", 100, 3, 0.03, 0.5), FpRow(1, "ours", 1, "p2", "infer: failed")]
    det = TRANSFER_LIKE + [DetectionRow(1, "f", "cls", "same", "ours", "in-process", "in-process bug_s3: time limit")]
    (tmp_path / "landed").mkdir()
    write_report(tmp_path / "landed", det, fp, "setup\n")
    det_back, fp_back = load_csv_rows(tmp_path / "landed")
    assert det_back == det and fp_back == fp
    assert main(["--report-only", "--csv-from", str(tmp_path / "landed"), "--out", str(tmp_path / "rebuilt")]) == 0
    assert "| ours | offline | transfer | 3/5 | 4/5 | 1/5 (1) | 40 | 3/5 |" in (tmp_path / "rebuilt" / "report.md").read_text()


def test_the_landed_results_rebuild_with_consistent_run_level_columns():
    """The committed eval/detection/results CSV files still load, and their run-level figures hang
    together: a clean catch at or after the trigger is a detected case whose twin is silent."""
    from eval.detection.run import load_csv_rows
    det, _fp = load_csv_rows(REPO / "eval" / "detection" / "results")
    summaries = summarize(det)
    assert summaries
    for s in summaries:
        assert s.clean_catches_after_trigger <= s.clean_catches <= s.buggy_alarming <= s.cases
        assert s.clean_catches_after_trigger <= s.detected
        assert s.correct_alarming + s.clean_catches <= s.cases
        if s.correct_alarming == 0:
            assert s.median_alarms_correct == 0
        if s.correct_alarming > (s.cases - s.not_finished) / 2:
            assert s.median_alarms_correct > 0


def test_summary_counts_caught_cases_whose_first_alarm_names_a_culprit():
    caught = [row("a", 3, 0, True), row("b", 2, 0, True), row("c", 1, 0, True), row("d", 0, 0, False)]
    caught[0].caught_by = "FunctionLeadRelation: Optimizer.zero_grad() between two Adam.step() calls"
    caught[1].caught_by = "ConsistentOutputRelation: relu() returns tensors with dtype = torch.float32"
    culprits = {"a": ("Optimizer.zero_grad",), "b": ("Module.train",), "d": ("Module.eval",)}  # c lists none
    [s] = summarize(caught, culprits)
    assert (s.culprit_named, s.culprit_caught) == (1, 2)
    [plain] = summarize(caught)
    assert (plain.culprit_named, plain.culprit_caught) == (0, 0)
