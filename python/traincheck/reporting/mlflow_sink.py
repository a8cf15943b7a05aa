"""MLflow: the original's metrics (invariants_total, violations_total, checks_*, violations_first_step /
last_step), per-step `traincheck_violations`, a violations table (violations.json) and the report and
violations_summary.json files as artifacts. The tracking URI comes from MLFLOW_TRACKING_URI as usual."""
import dataclasses


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
        checks = res.checks
        metrics = {"invariants_total": res.invariants_total, "violations_total": res.violations_total,
                   "violations_distinct_invariants": len(res.violations)}
        if res.mode == "offline":
            metrics.update({f"checks_{k}": v for k, v in checks.items()})
            metrics["checks_pass_rate_pct"] = round(100.0 * checks["passed"] / checks["total"], 1) if checks["total"] else 0.0
        if res.first_step is not None:
            metrics["violations_first_step"] = res.first_step
            metrics["violations_last_step"] = res.last_step
        m.log_metrics(metrics)
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
