"""Robustness probes, run against two installs side by side: what a careless or hostile user
meets (a run ended by os._exit, a huge name, a bad setting, a hanging exporter, a reused folder, ...).

    python bench/hardening_probes.py --baseline-python /path/to/old/python --candidate-python /path/to/new/python

Each install is a Python interpreter with traincheck installed; its native commands are found beside it
(bin/traincheck-check, ...) or on PATH. Prints one row per probe: what the baseline did, what the
candidate does. Nothing is timed for a verdict except the exporter probe, which prints its wall time.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DATA = Path(__file__).parents[1] / "tests" / "cpp" / "data" / "e2e"
INVARIANTS = DATA / "golden" / "invariants.json"


class Install:
    def __init__(self, python: str):
        self.python = python
        here = Path(python).parent
        self.bin = {name: str(here / name) if (here / name).exists() else shutil.which(name)
                    for name in ("traincheck-check", "traincheck-infer", "traincheck-onlinecheck")}

    def collect(self, cwd: Path, *args, env=None, timeout=300):
        return subprocess.run([self.python, "-m", "traincheck.collect_trace", *args], cwd=cwd, capture_output=True,
                              text=True, timeout=timeout, env={**os.environ, **(env or {})})

    def native(self, name: str, cwd: Path, *args, env=None, timeout=300):
        return subprocess.run([self.bin[name], *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **(env or {})})


def records(out: Path, suffix: str) -> int:
    n = 0
    for path in out.glob("trace_API_*"):
        for line in path.read_text().splitlines():
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                continue
            n += r.get("function", "").endswith(suffix) and "(pre)" in r.get("type", "")
    return n


def first_line(text: str) -> str:
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return (lines[-1] if lines and "Traceback" in text else lines[0] if lines else "").strip()[:110]


def probe_signatures_at_start(tc: Install, work: Path) -> str:
    (work / "t.py").write_text("import os, torch\nprint('SIGS', os.path.exists(os.path.join(os.environ['TRAINCHECK_OUTPUT_DIR'], "
                               "'api_signatures.json')))\ntorch.relu(torch.ones(2))\n")
    r = tc.collect(work, "-p", "t.py", "--output-dir", "out")
    return "api_signatures.json there when the script starts: " + ("yes" if "SIGS True" in r.stdout else "no")


def probe_os_exit(tc: Install, work: Path) -> str:
    (work / "t.py").write_text("import os, torch\nfor _ in range(1000):\n    torch.relu(torch.ones(2))\nos._exit(0)\n")
    tc.collect(work, "-p", "t.py", "--output-dir", "out")
    sigs = (work / "out" / "api_signatures.json").exists()
    return f"records of 1000 calls after os._exit: {records(work / 'out', 'relu')}; signatures: {'yes' if sigs else 'no'}"


def probe_long_name(tc: Install, work: Path) -> str:
    # Two runs' traces whose functions include one 5 MB name: infer's peak RSS and the .failed size.
    name = "torch.f" + "x" * (5 << 20)
    for run in ("a", "b"):
        d = work / run
        d.mkdir()
        with open(d / "trace_API_1_1.log", "w") as f:
            t = 0
            for step in range(4):
                for fn, cid in ((name, "1"), ("torch.g", "2"), ("torch.h", "3")):
                    for kind in ("pre", "post"):
                        t += 1
                        f.write(json.dumps({"func_call_id": f"{step}_{cid}", "thread_id": 1, "process_id": 1,
                                            "meta_vars": {"step": step, "stage": "training"}, "type": f"function_call ({kind})",
                                            "function": fn, "is_bound_method": False, "obj_id": None, "args": {}, "kwargs": {},
                                            "time": t}) + "\n")
    # The peak RSS of infer alone: measured by a fresh process whose only child it is.
    measure = "import resource, subprocess, sys; rc = subprocess.run(sys.argv[1:]).returncode; " \
              "print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    r = subprocess.run([sys.executable, "-c", measure, tc.bin["traincheck-infer"], "-f", "a", "b", "-o", "inv.json"], cwd=work,
                       capture_output=True, text=True, timeout=600)
    rc, rss = map(int, r.stdout.split())
    failed = work / "inv.json.failed"
    sizes = (work / "inv.json").stat().st_size + (failed.stat().st_size if failed.exists() else 0) if rc == 0 else 0
    return f"infer exit {rc}, peak RSS {rss / 1024:.0f} MB, invariant files {sizes / 1e6:.1f} MB"


def probe_setting(tc: Install, work: Path, name: str, value: str) -> str:
    (work / "t.py").write_text("import torch\ntorch.relu(torch.ones(2))\nprint('RAN')\n")
    r = tc.collect(work, "-p", "t.py", "--output-dir", "out", env={name: value})
    ran = "script ran" if "RAN" in r.stdout else "script did not run"
    return f"exit {r.returncode}, {ran}; stderr: {first_line(r.stderr) or '(nothing)'}"


def probe_export_hang(tc: Install, work: Path) -> str:
    hang = work / "hang"
    hang.write_text(f"#!/bin/sh\necho $$ > {work / 'hang.pid'}\nexec sleep 3600\n")
    hang.chmod(0o755)
    t0 = time.perf_counter()
    try:
        r = tc.native("traincheck-check", work, "-f", str(DATA / "buggy_run"), "-i", str(INVARIANTS), "-o", "out", "--report-mlflow",
                      env={"TRAINCHECK_PYTHON": str(hang), "TRAINCHECK_EXPORT_TIMEOUT_S": "2"}, timeout=30)
        return f"check exit {r.returncode} after {time.perf_counter() - t0:.1f} s (exporter hangs; TRAINCHECK_EXPORT_TIMEOUT_S=2)"
    except subprocess.TimeoutExpired:
        os.kill(int((work / "hang.pid").read_text()), 9)  # the probe's own exporter stand-in, left behind
        return "check still waiting after 30 s (probe gave up)"


def probe_export_cwd(tc: Install, work: Path) -> str:
    (work / "wandb").mkdir()
    (work / "wandb" / "__init__.py").write_text(f"open({str(work / 'IMPORTED')!r}, 'w').close()\nraise ImportError('probe')\n")
    tc.native("traincheck-check", work, "-f", str(DATA / "buggy_run"), "-i", str(INVARIANTS), "-o", "out", "--report-wandb",
              env={"WANDB_MODE": "disabled"})
    return "wandb/__init__.py in the working directory executed: " + ("yes" if (work / "IMPORTED").exists() else "no")


def probe_rerun(tc: Install, work: Path) -> str:
    (work / "a.py").write_text("import torch\nfor _ in range(3):\n    torch.relu(torch.ones(2))\n")
    (work / "b.py").write_text("import torch\nfor _ in range(5):\n    torch.relu(torch.ones(2))\n")
    tc.collect(work, "-p", "a.py", "--output-dir", "out")
    r = tc.collect(work, "-p", "b.py", "--output-dir", "out")
    return f"second collect exit {r.returncode}; relu calls in the folder: {records(work / 'out', 'relu')} (3 + 5 if merged)"


def probe_check_parent(tc: Install, work: Path) -> str:
    shutil.copytree(DATA / "buggy_run", work / "run")
    (work / "run" / "sub").mkdir()
    tc.native("traincheck-check", work / "run" / "sub", "-f", "..", "-i", str(INVARIANTS), "-o", "out")
    outside = [p.name for p in (work / "run").rglob("failed.log") if "out" not in p.relative_to(work / "run").parts]
    return "failed.log outside -o: " + (", ".join(outside) if outside else "none")


def probe_empty(tc: Install, work: Path) -> str:
    (work / "empty").mkdir()
    i = tc.native("traincheck-infer", work, "-f", "empty", "-o", "inv.json")
    c = tc.native("traincheck-check", work, "-f", "empty", "-i", str(INVARIANTS), "-o", "out")
    return f"infer exit {i.returncode}, check exit {c.returncode}"


def probe_escape(tc: Install, work: Path) -> str:
    name = "run\x1b[2J"
    shutil.copytree(DATA / "buggy_run", work / name)
    r = tc.native("traincheck-check", work, "-f", name, "-i", str(INVARIANTS), "-o", "out")
    return "raw ESC on the console: " + ("yes" if "\x1b" in r.stderr else "no")


PROBES = [
    ("3", "signatures while the script runs", probe_signatures_at_start),
    ("3", "short script ended by os._exit", probe_os_exit),
    ("4", "a 5 MB function name, infer", probe_long_name),
    ("5", "TRAINCHECK_CROSS_RANK_KEEP_STEPS=-1", lambda tc, w: probe_setting(tc, w, "TRAINCHECK_CROSS_RANK_KEEP_STEPS", "-1")),
    ("5", "TRAINCHECK_CROSS_RANK_PEERS=two", lambda tc, w: probe_setting(tc, w, "TRAINCHECK_CROSS_RANK_PEERS", "two")),
    ("5", "TRAINCHECK_WRITER_PERIOD_MS=abc", lambda tc, w: probe_setting(tc, w, "TRAINCHECK_WRITER_PERIOD_MS", "abc")),
    ("6", "exporter that never returns", probe_export_hang),
    ("6", "wandb/ in the working directory", probe_export_cwd),
    ("7", "rerun into an earlier run's folder", probe_rerun),
    ("7", "check -f ..", probe_check_parent),
    ("7", "infer / check on an empty folder", probe_empty),
    ("7", "trace folder named with ESC [2J", probe_escape),
]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--baseline-python", required=True)
    p.add_argument("--candidate-python", default=sys.executable)
    p.add_argument("--only", nargs="*", help="probe numbers (1-based) to run")
    args = p.parse_args()
    installs = {"baseline": Install(args.baseline_python), "candidate": Install(args.candidate_python)}
    print("| item | probe | baseline | candidate |\n|---|---|---|---|")
    for n, (item, what, probe) in enumerate(PROBES, 1):
        if args.only and str(n) not in args.only:
            continue
        cells = []
        for label, tc in installs.items():
            work = Path(tempfile.mkdtemp(prefix=f"tc_probe_{n}_{label}_"))
            try:
                cells.append(probe(tc, work))
            except Exception as e:  # noqa: BLE001 - a probe that breaks is a finding too
                cells.append(f"probe failed: {type(e).__name__}: {str(e)[:80]}")
            finally:
                shutil.rmtree(work, ignore_errors=True)
        print(f"| {item} | {what} | {cells[0]} | {cells[1]} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
