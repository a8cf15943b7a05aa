"""Shared by the tests of training libraries' Trainer loops (test_transformers_trainer.py,
test_lightning_trainer.py): a script run plain, under full collect, infer, selective collect with the
in-process check, and offline check, each run's JSON result kept for comparison."""
import json
import subprocess
import sys

from conftest import all_records, collect, read_trace_files


def run_plain(tmp_path, script, *script_args):
    result = tmp_path / "plain.json"
    done = subprocess.run([sys.executable, str(script), *script_args, "--result", str(result)], cwd=tmp_path,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(result.read_text())


def run_collect(tmp_path, script, out, *collect_args, script_args=()):
    result = tmp_path / f"{out}.json"
    done = collect(tmp_path, "-p", str(script), "--output-dir", out, *collect_args,
                   script_args=[*script_args, "--result", str(result)])
    assert done.returncode == 0, done.stdout + done.stderr
    assert "traincheck: warning" not in done.stderr, done.stderr
    return json.loads(result.read_text()), done


def run_native(tmp_path, *cmd):
    done = subprocess.run(list(cmd), cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def pre_records(out_dir, function):
    """(step, stage) of each call of `function`, in trace order."""
    return [(r["meta_vars"]["step"], r["meta_vars"].get("stage")) for r in all_records(out_dir)
            if r["type"] == "function_call (pre)" and r["function"] == function]


def steps_of_stage(out_dir, stage):
    return {r["meta_vars"]["step"] for r in all_records(out_dir) if r["meta_vars"].get("stage") == stage}


def tracked_steps(out_dir, prefix):
    """Steps with a state record of a parameter whose name starts with `prefix`."""
    return {r["meta_vars"]["step"] for records in read_trace_files(out_dir, "VAR").values() for r in records
            if r["var_name"].startswith(prefix)}


def infer_then_check_selective_run(tmp_path, script, script_args=()):
    """Invariants from the full run `full`, then a selective run of the same program checked in-process
    and offline. Returns its result and how many invariants were violated (online, offline)."""
    run_native(tmp_path, "traincheck-infer", "-f", "full", "-o", "inv.json")
    invariants = (tmp_path / "inv.json").read_text().splitlines()
    assert len(invariants) > 50
    result, done = run_collect(tmp_path, script, "selective", "-i", "inv.json", "--models-to-track", "model",
                               script_args=script_args)
    assert "online check:" in done.stderr, done.stderr
    online = json.loads(next((tmp_path / "selective" / "online_check").glob("summary_*.json")).read_text())
    run_native(tmp_path, "traincheck-check", "-f", "selective", "-i", "inv.json", "-o", "results")
    offline = json.loads((tmp_path / "results" / "selective" / "violations_summary.json").read_text())
    return result, len(online["violated_invariants"]), offline["distinct_invariants_violated"]
