"""The export child streams its inputs: holding every failed.log entry in memory costs several times the
log's size. Its results come from the checker's violations_summary.json alone (C++ decides every number,
Python displays them), so a failed.log of
any size is never read for them, and they are exactly the summary's."""
import json
import tracemalloc

from traincheck.reporting.results import read_online


def write_online_log(path, entries, invariants):
    with open(path, "w") as f:
        for i in range(entries):
            inv = {"relation": "APIContainRelation", "text_description": f"inv {i % invariants}", "params": [{"x": "p" * 200}]}
            f.write(json.dumps({"invariant": inv, "display_name": f"inv {i % invariants}",
                                "trace": [{"meta_vars.step": i // 50, "meta_vars.stage": "training", "blob": "b" * 5000}]}) + "\n")


def test_online_results_are_the_summarys_and_never_load_the_failed_log(tmp_path):
    write_online_log(tmp_path / "failed.log", 6000, 40)
    size = (tmp_path / "failed.log").stat().st_size
    assert size > 30e6
    rows = [{"display_name": f"inv {i}", "relation_type": "APIContainRelation", "first_step": i, "last_step": 119,
             "occurrences": 150, "first_stage": "training", "last_stage": "eval", "steps": [i, 119]} for i in range(40)]
    (tmp_path / "violations_summary.json").write_text(json.dumps({
        "first_violation_step": 0, "distinct_invariants_violated": 40, "violations": rows,
        "invariants_violated_per_step": [{"step": s, "invariants": 40} for s in range(120)]}))
    tracemalloc.start()
    res = read_online(str(tmp_path))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < size / 100, (peak, size)
    assert res.violations_total == 6000 and len(res.violations) == 40
    assert res.step_counts == {s: 40 for s in range(120)}
    assert [v.invariant for v in res.violations] == [f"inv {i}" for i in range(40)]  # the checker's order
    row = res.violations[7]
    assert (row.occurrences, row.first_step, row.first_stage, row.last_step, row.last_stage) == (150, 7, "training", 119, "eval")
    assert res.relations == {"APIContainRelation": {"failed": 40, "passed": 0, "not_triggered": 0}}


def test_an_online_folder_without_a_summary_gives_empty_results(tmp_path):
    write_online_log(tmp_path / "failed.log", 10, 2)  # a checker killed before it stopped
    res = read_online(str(tmp_path))
    assert res.violations == [] and res.violations_total == 0 and res.step_counts == {}
