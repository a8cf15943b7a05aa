"""MLflow: the original's metrics (invariants_total, violations_total, checks_*, violations_first_step /
last_step), per-step `traincheck_violations`, a violations table (violations.json) and the report and
violations_summary.json files as artifacts. The tracking URI comes from MLFLOW_TRACKING_URI as usual."""
import dataclasses

from traincheck.reporting.results import renamed, totals

# results.totals' names -> the metric names the original's MLflow reporter logs.
TOTAL_NAMES = {"distinct_invariants_violated": "violations_distinct_invariants", "pass_rate_pct": "checks_pass_rate_pct",
               "first_step": "violations_first_step", "last_step": "violations_last_step"}


class MlflowSink:
    name = "mlflow"

    def __init__(self, opts, mode: str, output_dir: str):
        import mlflow

        self.mlflow = mlflow
        if opts.mlflow_experiment:
            mlflow.set_experiment(opts.mlflow_experiment)
        self.run = mlflow.start_run(run_name=opts.mlflow_run_name or None)
        mlflow.set_tags({"traincheck.mode": mode, "traincheck.output_dir": output_dir})

    def log_step(self, step: int, violations: int):
        self.mlflow.log_metric("traincheck_violations", violations, step=step)

    def finish(self, res):
        m = self.mlflow
        m.log_metrics(renamed(totals(res), TOTAL_NAMES))
        m.set_tag("traincheck.invariants_total", str(res.invariants_total))
        columns = [f.name for f in dataclasses.fields(res.violations[0])] if res.violations else []
        m.log_dict({"columns": columns, "data": [list(dataclasses.astuple(v)) for v in res.violations]}, "violations.json")
        m.log_dict({"columns": ["relation", "failed", "passed", "not_triggered"],
                    "data": [[r, c["failed"], c["passed"], c["not_triggered"]] for r, c in sorted(res.relations.items())]},
                   "relation_breakdown.json")
        for path in res.summary_files:
            trace = path.split("/")[-2] if res.mode == "offline" else "online"
            m.log_dict(_read_json(path), f"violations_summaries/{trace}.json")
        if res.report_html:
            m.log_artifact(res.report_html)
        m.end_run()

    def abort(self):
        self.mlflow.end_run(status="FAILED")


def _read_json(path):
    import json

    with open(path) as f:
        return json.load(f)
