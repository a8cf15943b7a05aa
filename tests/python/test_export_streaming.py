"""The export child streams its inputs (issue 24 item 4): it held every failed.log entry in memory (717 MB
for a 242 MB log, a MemoryError on a 3.9 GB one). Its peak memory now stays far below the log's size, and
its results are the same as from entries read whole."""
import json
import tracemalloc

from traincheck.reporting.results import read_online


def write_online_log(path, entries, invariants):
    with open(path, "w") as f:
        for i in range(entries):
            inv = {"relation": "APIContainRelation", "text_description": f"inv {i % invariants}", "params": [{"x": "p" * 200}]}
            f.write(json.dumps({"invariant": inv, "display_name": f"inv {i % invariants}",
                                "trace": [{"meta_vars.step": i // 50, "meta_vars.stage": "training", "blob": "b" * 5000}]}) + "\n")


def test_reading_a_large_online_failed_log_holds_no_entries(tmp_path):
    write_online_log(tmp_path / "failed.log", 6000, 40)
    size = (tmp_path / "failed.log").stat().st_size
    assert size > 30e6
    tracemalloc.start()
    res = read_online(str(tmp_path))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < size / 10, (peak, size)
    assert res.violations_total == 6000 and len(res.violations) == 40
    assert res.step_counts == {s: 40 for s in range(120)}
    row = next(v for v in res.violations if v.invariant == "inv 7")
    assert (row.occurrences, row.first_step, row.last_step, row.first_stage) == (150, 0, 119, "training")
