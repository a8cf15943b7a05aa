"""The overhead analysis on hand-made per-iteration files, and the plot files.

Expected values are computed by hand in the comments (population standard deviation, as numpy's default).
"""
import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from eval.perf_overhead import analysis  # noqa: E402
from eval.perf_overhead.analysis import OverheadRow  # noqa: E402


def write_times(path: Path, times, partial_tail: str = "") -> None:
    path.write_text("".join(f"{t}\n" for t in times) + partial_tail)


def test_aligned_ratios_drop_warmup_and_average_by_hand():
    naive = [1.0, 1.0, 2.0, 2.0, 4.0]
    method = [10.0, 3.0, 4.0, 6.0, 4.0]
    # warm-up 1 drops index 0; ratios 3/1, 4/2, 6/2, 4/4 = 3, 2, 3, 1
    assert analysis.aligned_ratios(method, naive, warmup=1) == [3.0, 2.0, 3.0, 1.0]
    mean, std = analysis.mean_std([3.0, 2.0, 3.0, 1.0])
    # mean 9/4 = 2.25; deviations .75 -.25 .75 -1.25; squares sum 2.75; /4 = .6875
    assert mean == pytest.approx(2.25)
    assert std == pytest.approx(math.sqrt(0.6875))


def test_alignment_stops_at_the_shorter_series():
    # the method completed 3 iterations: ratios at index 1 and 2 only: 3/1 and 4/2
    ratios = analysis.aligned_ratios([10.0, 3.0, 4.0], [1.0, 1.0, 2.0, 2.0, 4.0], warmup=1)
    assert ratios == [3.0, 2.0]
    assert analysis.mean_std(ratios) == pytest.approx((2.5, 0.5))


def test_fewer_iterations_than_warmup_uses_the_last_completed_one():
    # a run stopped by its time limit after 2 iterations, warm-up 5: only index 1 (6 / 2)
    assert analysis.aligned_ratios([5.0, 6.0], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], warmup=5) == [3.0]
    assert analysis.aligned_ratios([], [1.0], warmup=5) == []


def test_merge_repeats_is_the_per_iteration_median():
    # index 0: median(1, 3, 2) = 2; index 1: median(2, 4) = 3; index 2: only 3
    assert analysis.merge_repeats([[1.0, 2.0, 3.0], [3.0, 4.0], [2.0]]) == [2.0, 3.0, 3.0]
    assert analysis.merge_repeats([]) == []


def test_partial_last_line_of_a_killed_run_is_ignored():
    assert analysis.parse_iteration_times("0.5\n0.25\n0.12") == [0.5, 0.25]
    assert analysis.parse_iteration_times("0.5\n\n0.25\n") == [0.5, 0.25]
    assert analysis.parse_iteration_times("") == []


def test_result_file_names_round_trip():
    assert analysis.result_file_name("mnist", "monkey-patch") == "e2e_mnist_monkey-patch.txt"
    assert analysis.parse_result_file_name("e2e_mnist_monkey-patch.txt") == ("mnist", "monkey-patch")
    assert analysis.parse_result_file_name("e2e_mnist.txt") is None
    assert analysis.parse_result_file_name("overhead_e2e.csv") is None
    with pytest.raises(ValueError):
        analysis.result_file_name("my_workload", "naive")


def test_files_to_csv_by_hand(tmp_path):
    write_times(tmp_path / "e2e_mnist_naive.txt", [9.0, 1.0, 2.0, 4.0])
    # ratios after warm-up 1: 10/1, 30/2, 20/4 = 10, 15, 5: mean 10, deviations 0 5 -5: var 50/3
    write_times(tmp_path / "e2e_mnist_settrace.txt", [99.0, 10.0, 30.0, 20.0])
    # ratios 1.5/1, 2/2, 4/4 (a cut last line is ignored) = 1.5, 1, 1: mean 3.5/3, var ((1/3)^2+2*(1/6)^2)/3
    write_times(tmp_path / "e2e_mnist_monkey-patch.txt", [9.0, 1.5, 2.0, 4.0], partial_tail="123")
    # selective completed 2 iterations: after warm-up 1, index 1 only: 1.02/1
    write_times(tmp_path / "e2e_mnist_selective.txt", [9.0, 1.02])
    write_times(tmp_path / "e2e_vae_settrace.txt", [1.0, 2.0])  # no naive for vae: no row
    write_times(tmp_path / "e2e_gcn_naive.txt", [1.0, 2.0, 2.0])
    write_times(tmp_path / "e2e_gcn_selective.txt", [1.0, 2.2, 2.2])  # 1.1 and 1.1: std 0

    results = analysis.load_results(tmp_path)
    assert set(results) == {"mnist", "vae", "gcn"}
    rows = analysis.compute_overheads(results, warmup=1, task_order=["mnist", "gcn"])
    got = [(r.task, r.method) for r in rows]
    assert got == [("mnist", "settrace"), ("mnist", "monkey-patch"), ("mnist", "selective"),
                   ("gcn", "selective")]
    by_key = {(r.task, r.method): r for r in rows}
    assert by_key["mnist", "settrace"].overhead == pytest.approx(10.0)
    assert by_key["mnist", "settrace"].std == pytest.approx(math.sqrt(50 / 3))
    assert by_key["mnist", "settrace"].n == 3
    assert by_key["mnist", "monkey-patch"].overhead == pytest.approx(3.5 / 3)
    assert by_key["mnist", "monkey-patch"].std == pytest.approx(math.sqrt(((1 / 3) ** 2 + 2 * (1 / 6) ** 2) / 3))
    assert by_key["mnist", "selective"].overhead == pytest.approx(1.02)
    assert by_key["mnist", "selective"].n == 1
    assert by_key["gcn", "selective"].overhead == pytest.approx(1.1)
    assert by_key["gcn", "selective"].std == pytest.approx(0.0)

    csv_path = tmp_path / "overhead_e2e.csv"
    analysis.write_csv(rows, csv_path)
    lines = csv_path.read_text().splitlines()
    # The old columns first, as old readers expect them; the memory columns after (empty: not measured).
    assert lines[0] == "task,method,overhead,std," + ",".join(analysis.MEMORY_CSV_COLUMNS)
    assert lines[1] == "mnist,settrace,10.0000,4.0825,,,,,,0"
    back = analysis.read_csv(csv_path)
    assert [(r.task, r.method) for r in back] == got
    assert back[2].overhead == pytest.approx(1.02)

    table = analysis.format_table(rows)
    assert "settrace" in table.splitlines()[0] and "gcn" in table
    assert "10x" in table and "1.1x" in table


def test_plot_files_are_written(tmp_path):
    pytest.importorskip("matplotlib")
    from eval.perf_overhead.plot import plot_overheads

    rows = [OverheadRow("mnist", "settrace", 550.0, 20.0, 10), OverheadRow("mnist", "monkey-patch", 1.8, 0.1, 10),
            OverheadRow("mnist", "selective", 1.01, 0.02, 10), OverheadRow("gcn", "selective", 0.99, 0.01, 10),
            OverheadRow("gcn", "peer-selective", 1.3, 0.05, 10)]
    paths = plot_overheads(rows, tmp_path / "performance")
    assert [p.name for p in paths] == ["performance.pdf", "performance.png"]
    pdf, png = (p.read_bytes() for p in paths)
    assert pdf.startswith(b"%PDF") and len(pdf) > 1000
    assert png.startswith(b"\x89PNG") and len(png) > 1000


def test_plot_without_rows_is_an_error(tmp_path):
    pytest.importorskip("matplotlib")
    from eval.perf_overhead.plot import plot_overheads

    with pytest.raises(ValueError):
        plot_overheads([], tmp_path / "performance")
