"""--report-mlflow and --report-wandb of traincheck-check and traincheck-onlinecheck (python -m
traincheck.reporting.export as the checkers' child), against the libraries' local backends: an MLflow file
store and a W&B offline run, read back. They need the `report` extra (pip install 'traincheck[report]',
which scripts/install_deps.sh installs); without it they skip and say so."""
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).parents[1] / "cpp" / "data" / "e2e"
TRACE = DATA / "buggy_run"  # 6 steps; violations at steps 4 and 5
INVARIANTS = DATA / "golden" / "invariants.json"
SKIP = "needs the report extra: pip install 'traincheck[report]' (wandb, mlflow-skinny)"


def check(tmp_path, *flags, env=None, command="traincheck-check", extra=()):
    cmd = [command, "-f", str(TRACE), "-i", str(INVARIANTS), "-o", "out", *extra, *flags]
    result = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300, env={**os.environ, **(env or {})})
    assert result.returncode == 0, result.stderr
    return result


def fake_python(tmp_path, name, prelude):
    """An interpreter for TRAINCHECK_PYTHON that runs `prelude` (Python), then the exporter with the
    arguments the checker passes after `-m traincheck.reporting.export`."""
    (tmp_path / f"{name}.py").write_text(
        "import runpy, sys\n" + prelude + "\n"
        "sys.argv = ['export'] + sys.argv[sys.argv.index('-m') + 2:]\n"
        "runpy.run_module('traincheck.reporting.export', run_name='__main__', alter_sys=True)\n")
    path = tmp_path / name
    path.write_text(f"#!/bin/sh\nexec {sys.executable} {tmp_path / name}.py \"$@\"\n")
    path.chmod(0o755)
    return path


def mlflow_env(tmp_path, monkeypatch):
    """The file store's settings for the checker's exporter, and for this process, which reads it back.
    MLflow 3 keeps the file store in maintenance mode and asks for MLFLOW_ALLOW_FILE_STORE to use it."""
    env = {"MLFLOW_TRACKING_URI": (tmp_path / "mlruns").as_uri(), "MLFLOW_ALLOW_FILE_STORE": "true"}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return env


def failed_entries(path):
    """failed.log entries: indent-4 objects (offline) or one per line (online); split at lines starting '{'."""
    entries, current = [], []
    for line in path.read_text().splitlines():
        if line.startswith("{") and current:
            entries.append(json.loads("\n".join(current)))
            current = []
        current.append(line)
    if "".join(current).strip():
        entries.append(json.loads("\n".join(current)))
    return entries


def expected_step_counts(entries, key):
    """Per step, the distinct invariants with a violating record at it, derived here from failed.log."""
    at = {}
    for e in entries:
        for r in e["trace"]:
            if r.get("meta_vars.step") is not None:
                at.setdefault(r["meta_vars.step"], set()).add(key(e))
    return {s: len(k) for s, k in sorted(at.items())}


def test_check_logs_metrics_per_step_counts_tags_and_artifacts_to_an_mlflow_file_store(tmp_path, monkeypatch):
    pytest.importorskip("mlflow", reason=SKIP)
    from mlflow.tracking import MlflowClient

    env = mlflow_env(tmp_path, monkeypatch)
    result = check(tmp_path, "--report-mlflow", "--mlflow-experiment", "tc-exp", "--mlflow-run-name", "buggy-check", env=env)
    assert "warning" not in result.stderr, result.stderr
    summary = json.loads((tmp_path / "out" / "buggy_run" / "violations_summary.json").read_text())
    entries = failed_entries(tmp_path / "out" / "buggy_run" / "failed.log")
    n_invariants = sum(1 for line in INVARIANTS.read_text().splitlines() if line.strip())

    client = MlflowClient(tracking_uri=env["MLFLOW_TRACKING_URI"])
    [run] = client.search_runs([client.get_experiment_by_name("tc-exp").experiment_id])
    assert run.info.run_name == "buggy-check" and run.info.status == "FINISHED"
    m = run.data.metrics
    assert m["invariants_total"] == n_invariants
    assert m["checks_failed"] == summary["distinct_invariants_violated"] == len(entries) > 0
    assert m["checks_total"] == m["checks_failed"] + m["checks_passed"] + m["checks_not_triggered"] == n_invariants
    assert m["violations_total"] == sum(v["occurrences"] for v in summary["violations"])
    assert m["violations_first_step"] == summary["first_violation_step"] == 4
    assert m["violations_last_step"] == max(v["last_step"] for v in summary["violations"])
    history = client.get_metric_history(run.info.run_id, "traincheck_violations")
    assert {h.step: h.value for h in history} == expected_step_counts(entries, lambda e: json.dumps(e["invariant"], sort_keys=True))
    assert run.data.tags["traincheck.mode"] == "offline"

    artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"report.html", "violations.json", "relation_breakdown.json", "violations_summaries"} <= artifacts
    table = json.loads(Path(client.download_artifacts(run.info.run_id, "violations.json", str(tmp_path))).read_text())
    rows = [dict(zip(table["columns"], row)) for row in table["data"]]
    assert sorted(r["invariant"] for r in rows) == sorted(v["display_name"] for v in summary["violations"])
    first = rows[0]
    assert (first["trace"], first["first_step"], first["first_stage"]) == ("buggy_run", 4, "training"), first


def test_check_logs_summary_tables_per_step_series_and_report_to_an_offline_wandb_run(tmp_path):
    pytest.importorskip("wandb", reason=SKIP)
    from wandb_offline import OfflineRun

    env = {"WANDB_MODE": "offline", "WANDB_DIR": str(tmp_path), "WANDB_SILENT": "true"}
    result = check(tmp_path, "--report-wandb", "--wandb-project", "tc-proj", "--wandb-run-name", "buggy-check",
                   "--wandb-group", "g1", "--wandb-tags", "ci", "buggy", env=env)
    assert "warning" not in result.stderr, result.stderr
    summary = json.loads((tmp_path / "out" / "buggy_run" / "violations_summary.json").read_text())
    entries = failed_entries(tmp_path / "out" / "buggy_run" / "failed.log")

    run = OfflineRun(tmp_path)
    assert (run.run.project, run.run.display_name, run.run.run_group, list(run.run.tags)) == ("tc-proj", "buggy-check", "g1", ["ci", "buggy"])
    s = run.summary
    assert s["traincheck/checks_failed"] == summary["distinct_invariants_violated"] == len(entries)
    assert s["traincheck/first_violation_step"] == 4
    assert s["traincheck/violations_total"] == sum(v["occurrences"] for v in summary["violations"])
    per_step = {h["traincheck/step"]: h["traincheck/violations"] for h in run.history if "traincheck/violations" in h}
    assert per_step == expected_step_counts(entries, lambda e: json.dumps(e["invariant"], sort_keys=True))
    [tables] = [h for h in run.history if "violations/_type" in h]  # nested keys come flattened
    assert tables["violations/_type"] == tables["relation_breakdown/_type"] == "table-file"
    assert tables["violations/nrows"] == len(entries) and tables["traincheck/report/_type"] == "html-file"
    assert "traincheck_report" in [a.name for a in run.artifacts]
    assert run.config["traincheck/mode"] == "offline"


def test_onlinecheck_logs_per_step_counts_while_following_and_the_final_summary_to_mlflow(tmp_path, monkeypatch):
    pytest.importorskip("mlflow", reason=SKIP)
    from mlflow.tracking import MlflowClient

    env = mlflow_env(tmp_path, monkeypatch)
    check(tmp_path, "--report-mlflow", "--mlflow-run-name", "online", env=env, command="traincheck-onlinecheck",
          extra=("--exit-on-idle", "1", "--report-interval-seconds", "0.5"))
    entries = failed_entries(tmp_path / "out" / "failed.log")
    summary = json.loads((tmp_path / "out" / "violations_summary.json").read_text())
    assert entries and summary["first_violation_step"] == 4

    client = MlflowClient(tracking_uri=env["MLFLOW_TRACKING_URI"])
    [run] = client.search_runs([client.get_experiment_by_name("Default").experiment_id])
    assert run.info.run_name == "online" and run.data.tags["traincheck.mode"] == "online"
    assert run.data.metrics["violations_total"] == len(entries)
    assert run.data.metrics["violations_first_step"] == 4
    history = client.get_metric_history(run.info.run_id, "traincheck_violations")
    assert {h.step: h.value for h in history} == expected_step_counts(entries, lambda e: json.dumps(e["invariant"], sort_keys=True))
    assert "report.html" in {a.path for a in client.list_artifacts(run.info.run_id)}


def test_a_missing_package_or_interpreter_is_a_warning_and_the_check_still_succeeds(tmp_path):
    # An interpreter where `import wandb` fails: the exporter must name the package; the check's status stays 0.
    blocker = fake_python(tmp_path, "python-without-wandb", 'sys.modules["wandb"] = None')
    result = check(tmp_path, "--report-wandb", env={"TRAINCHECK_PYTHON": str(blocker)})
    assert "the package wandb is not installed" in result.stderr and "the check's result is unchanged" in result.stderr, result.stderr
    assert (tmp_path / "out" / "buggy_run" / "failed.log").stat().st_size > 0
    result = check(tmp_path, "--report-mlflow", env={"TRAINCHECK_PYTHON": str(tmp_path / "no-such-python")})
    assert "cannot run" in result.stderr and "the check's result is unchanged" in result.stderr, result.stderr


# The reporting child: a time limit, isolation from the working directory, one-line errors.

def test_an_exporter_that_hangs_is_stopped_after_the_timeout_and_the_check_still_succeeds(tmp_path):
    hang = tmp_path / "python-that-hangs"
    hang.write_text("#!/bin/sh\nsleep 3600\n")  # an unreachable tracking server, as far as the checker can tell
    hang.chmod(0o755)
    # The generous subprocess timeout only turns a hang (the bug) into a failure; nothing is timed.
    result = subprocess.run(["traincheck-check", "-f", str(TRACE), "-i", str(INVARIANTS), "-o", "out", "--report-mlflow"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120,
                            env={**os.environ, "TRAINCHECK_PYTHON": str(hang), "TRAINCHECK_EXPORT_TIMEOUT_S": "0.5"})
    assert result.returncode == 0, result.stderr
    assert "did not finish within 0.5 s (TRAINCHECK_EXPORT_TIMEOUT_S); stopped; the check's result is unchanged" in result.stderr


@pytest.mark.parametrize("value", ["abc", "0", "-1", "nan", "1e9"])
def test_a_bad_export_timeout_is_refused_at_start_in_one_line(tmp_path, value):
    for command in ("traincheck-check", "traincheck-onlinecheck"):
        result = subprocess.run([command, "-f", str(TRACE), "-i", str(INVARIANTS), "-o", "out"], cwd=tmp_path,
                                capture_output=True, text=True, timeout=120,
                                env={**os.environ, "TRAINCHECK_EXPORT_TIMEOUT_S": value})
        assert result.returncode == 2, result.stderr
        assert result.stderr == (f"{command}: error: TRAINCHECK_EXPORT_TIMEOUT_S='{value}': expected a number from 0.1 to "
                                 "86400 (seconds the W&B / MLflow export may take after the check)\n")
        assert not (tmp_path / "out").exists()


def test_the_exporter_never_imports_a_package_from_the_working_directory(tmp_path):
    marker = tmp_path / "imported"
    for package in ("wandb", "mlflow", "traincheck"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text(f"open({str(marker)!r}, 'a').write({package!r})\n")
    check(tmp_path, "--report-wandb", "--report-mlflow",
          env={"WANDB_MODE": "offline", "WANDB_DIR": str(tmp_path), "MLFLOW_TRACKING_URI": (tmp_path / "mlruns").as_uri(),
               "MLFLOW_ALLOW_FILE_STORE": "true"})
    assert not marker.exists(), marker.read_text()


def test_a_backend_that_fails_to_set_up_is_reported_in_one_line_without_a_traceback(tmp_path):
    broken = fake_python(tmp_path, "python-with-broken-mlflow", "\n".join([
        "import types",
        "m = types.ModuleType('mlflow')",
        "def fail(*a, **k): raise ConnectionError('cannot reach http://10.255.255.1:5000\\nretried 7 times')",
        "m.set_experiment = m.start_run = fail",
        "sys.modules['mlflow'] = m"]))
    result = check(tmp_path, "--report-mlflow", "--mlflow-experiment", "e", env={"TRAINCHECK_PYTHON": str(broken)})
    assert "Traceback" not in result.stderr and "retried" not in result.stderr, result.stderr
    assert ("traincheck-export: --report-mlflow: cannot set up the run (ConnectionError: cannot reach http://10.255.255.1:5000)\n"
            in result.stderr), result.stderr
    assert "reporting to mlflow failed (exit status 1); the check's result is unchanged" in result.stderr


def test_following_logs_exactly_the_per_step_counts_the_checker_hands_over(monkeypatch):
    """Live, the exporter recounts nothing: each "<step> <invariants>" line on its stdin is one point, in
    the order given, split lines joined, anything else skipped; end of input ends the follow."""
    from traincheck.reporting import export

    read_end, write_end = os.pipe()
    os.write(write_end, b"3 1\n4 2\nnot a count\n7 ")
    os.write(write_end, b"5\n")
    os.close(write_end)
    logged = []

    class Sink:
        def log_step(self, step, n):
            logged.append((step, n))

    # follow() ignores SIGINT, as the exporter process it runs in should; this test's process must not
    # keep that: every process it starts later would inherit it (a Ctrl-C test then waits forever).
    previous = signal.getsignal(signal.SIGINT)
    try:
        with os.fdopen(read_end, "rb") as stdin:
            monkeypatch.setattr(sys, "stdin", stdin)
            assert export.follow(None, [Sink()]) == 7
    finally:
        signal.signal(signal.SIGINT, previous)
    assert logged == [(3, 1), (4, 2), (7, 5)]
