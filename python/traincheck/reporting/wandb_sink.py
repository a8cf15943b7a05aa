"""Weights & Biases: summary keys `traincheck/*`, tables `relation_breakdown` and `violations`, report.html
as an artifact and as `wandb.Html`, and per-step `traincheck/violations` plotted against its own x-axis
`traincheck/step` (so it never collides with the step counter of a training run resumed by --wandb-run-id).
WANDB_MODE, WANDB_DIR and the API key come from the environment as usual."""
import dataclasses

from traincheck.reporting.results import renamed, totals

# results.totals' names -> the summary keys (after "traincheck/") the original's W&B reporter sets.
TOTAL_NAMES = {"first_step": "first_violation_step", "last_step": "last_violation_step"}


class WandbSink:
    name = "wandb"

    def __init__(self, opts, mode: str, output_dir: str):
        import wandb

        self.wandb = wandb
        self.run = wandb.init(project=opts.wandb_project or None, entity=opts.wandb_entity or None,
                              name=opts.wandb_run_name or None, group=opts.wandb_group or None,
                              tags=opts.wandb_tags or None, id=opts.wandb_run_id or None,
                              resume="allow" if opts.wandb_run_id else None, job_type="checker")
        self.run.config.update({"traincheck/mode": mode, "traincheck/output_dir": output_dir}, allow_val_change=True)
        self.run.define_metric("traincheck/step")
        self.run.define_metric("traincheck/violations", step_metric="traincheck/step")

    def log_step(self, step: int, violations: int):
        self.run.log({"traincheck/step": step, "traincheck/violations": violations})

    def finish(self, res):
        wandb, run = self.wandb, self.run
        summary = renamed(totals(res), TOTAL_NAMES, "traincheck/")
        run.config.update({"traincheck/invariants_total": res.invariants_total}, allow_val_change=True)
        tables = {
            "relation_breakdown": wandb.Table(columns=["relation", "failed", "passed", "not_triggered"],
                                              data=[[r, c["failed"], c["passed"], c["not_triggered"]] for r, c in sorted(res.relations.items())]),
            "violations": wandb.Table(columns=[f.name for f in dataclasses.fields(_ViolationColumns)],
                                      data=[list(dataclasses.astuple(v)) for v in res.violations]),
        }
        if res.report_html:
            with open(res.report_html) as f:
                tables["traincheck/report"] = wandb.Html(f.read())
        run.log(tables)
        for key, value in summary.items():
            run.summary[key] = value
        if res.report_html or res.summary_files:
            artifact = wandb.Artifact("traincheck_report", type="checker_output",
                                      description="report.html and violations_summary.json of a TrainCheck check")
            if res.report_html:
                artifact.add_file(res.report_html, name="report.html")
            for path in res.summary_files:
                trace = path.split("/")[-2] if res.mode == "offline" else "online"
                artifact.add_file(path, name=f"violations_summaries/{trace}.json")
            run.log_artifact(artifact)
        run.finish()

    def abort(self):
        self.run.finish(exit_code=1)


from traincheck.reporting.results import Violation as _ViolationColumns  # noqa: E402  (the table's columns)
