"""`python -m traincheck.reporting.export`: logs a checker output folder to W&B and/or MLflow.

Run by traincheck-check (once, on the finished folder) and traincheck-onlinecheck (with --follow, from its
start): following, it logs each step's count of violated invariants as the checker hands it over on stdin
("<step> <invariants>" lines, each step once, when its count is final: cpp/check/report/final_step_counts.h),
and it finalises when its stdin reaches end of file, which the checker causes by closing the pipe at stop or
by exiting in any way; the steps after the last one handed over come from violations_summary.json. Every
count is the checker's: nothing is recounted here. Exit status: 0; 3 when a backend package is missing (named on stderr); 1 when a backend failed (said
in one line). Run as `python -I` (cpp/check/report/report_exporter.h): nothing from the working directory is
imported."""
import argparse
import os
import signal
import sys

from traincheck.reporting.results import read_results

MISSING_PACKAGE = 3
PACKAGES = {"wandb": "wandb", "mlflow": "mlflow (mlflow-skinny)"}


def parse_args(argv):
    p = argparse.ArgumentParser(prog="traincheck-export", description=__doc__.splitlines()[0])
    p.add_argument("--output-dir", required=True)
    p.add_argument("--mode", choices=["offline", "online"], required=True)
    p.add_argument("--follow", action="store_true")
    p.add_argument("--wandb", action="store_true")
    p.add_argument("--mlflow", action="store_true")
    for o in ("wandb-project", "wandb-entity", "wandb-run-name", "wandb-group", "wandb-run-id", "mlflow-experiment", "mlflow-run-name"):
        p.add_argument(f"--{o}", default="")
    p.add_argument("--wandb-tags", nargs="*", default=[])
    return p.parse_args(argv)


def one_line(e: BaseException) -> str:
    """An error as one line: its type and the first line of its message (a backend's multi-line messages
    and tracebacks stay out of the checker's console)."""
    text = str(e).strip().splitlines()
    return type(e).__name__ + (": " + text[0] if text else "")


def open_sinks(opts) -> tuple[list, int]:
    """The sinks whose package imports and whose run could be set up. A missing package is named on
    stderr and sets the status to 3; a backend that fails to set up is said in one line (status 1)."""
    sinks, status = [], 0
    for name in ("wandb", "mlflow"):
        if not getattr(opts, name):
            continue
        try:
            __import__(name)
        except ImportError as e:
            print(f"traincheck-export: --report-{name}: the package {PACKAGES[name]} is not installed ({one_line(e)}); "
                  f"install it with: pip install 'traincheck[report]'", file=sys.stderr)
            status = MISSING_PACKAGE
            continue
        except Exception as e:  # noqa: BLE001 - a broken installation: one line, never a traceback
            print(f"traincheck-export: --report-{name}: the package {PACKAGES[name]} fails to import ({one_line(e)})",
                  file=sys.stderr)
            status = status or 1
            continue
        if name == "wandb":
            from traincheck.reporting.wandb_sink import WandbSink as Sink
        else:
            from traincheck.reporting.mlflow_sink import MlflowSink as Sink
        try:
            sinks.append(Sink(opts, opts.mode, os.path.abspath(opts.output_dir)))
        except Exception as e:  # noqa: BLE001 - a backend's setup error (bad URI, no credentials): one line
            print(f"traincheck-export: --report-{name}: cannot set up the run ({one_line(e)})", file=sys.stderr)
            status = status or 1
    return sinks, status


def step_counts(lines: list[bytes]) -> list[tuple[int, int]]:
    """(step, invariants) of complete "<step> <invariants>" lines from the checker; anything else is skipped."""
    out = []
    for line in lines:
        parts = line.split()
        if len(parts) == 2 and all(p.lstrip(b"-").isdigit() for p in parts):
            out.append((int(parts[0]), int(parts[1])))
    return out


def follow(opts, sinks):
    """Until stdin ends: the per-step counts the checker hands over. Returns the last step logged."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group; the checker tells us when to stop
    logged_upto, partial = None, b""
    while True:
        data = os.read(sys.stdin.fileno(), 65536)
        lines = (partial + data).split(b"\n")
        partial = lines.pop()  # an incomplete last line waits for its end
        for step, n in step_counts(lines):
            for sink in sinks:
                sink.log_step(step, n)
            logged_upto = step
        if not data:
            return logged_upto


def main(argv=None) -> int:
    opts = parse_args(sys.argv[1:] if argv is None else argv)
    sinks, status = open_sinks(opts)
    if not sinks:
        return status
    try:
        logged_upto = follow(opts, sinks) if opts.follow else None
        res = read_results(opts.output_dir, opts.mode)
        for step, n in sorted(res.step_counts.items()):
            if logged_upto is None or step > logged_upto:
                for sink in sinks:
                    sink.log_step(step, n)
        for sink in sinks:
            sink.finish(res)
    except Exception as e:  # a backend's error: said, and the checker's status stays its own
        print(f"traincheck-export: {opts.output_dir}: {one_line(e)}", file=sys.stderr)
        for sink in sinks:
            try:
                sink.abort()
            except Exception:
                pass
        return 1
    return status


if __name__ == "__main__":
    sys.exit(main())
