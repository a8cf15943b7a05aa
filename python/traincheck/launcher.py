"""Writes the launcher files of a collect run and runs the training program (docs/collection.md §Launcher).

`_traincheck_<script>.py` in the output directory starts the recorder and runs the user's script
unmodified on disk; a shell launcher (-s) is copied as `_traincheck_<run.sh>` with the script's path
replaced by that file's. The program runs with the output directory as its working directory; its stdout
and stderr are echoed to ours, kept apart, and saved (OUTPUT_FILES), and its exit code is returned.
"""

from __future__ import annotations

import glob
import json
import os
import re
import signal
import subprocess
import sys
import threading

from traincheck import output_files

# Paths are data, never code: the script's path goes into the stub as a Python literal (repr), never as
# raw text (a path with a newline would start a statement), and the shell launcher names the stub through
# an environment variable, never by its text (an output folder `o$(cmd)` or with a space stays one word).
_STUB = '''# Written by traincheck-collect: runs the script {script} under TrainCheck instrumentation.
import traincheck.runtime
traincheck.runtime.main({config})
'''
LAUNCHER_ENV = "TRAINCHECK_LAUNCHER"


def prepare(config: dict, shscript: str | None, script_args: list[str]) -> list[str]:
    """Writes the launcher(s) and returns the command that runs the program."""
    out = config["output_dir"]
    script = config["pyscript"]
    stub = os.path.join(out, "_traincheck_" + os.path.basename(script))
    with output_files.open_output(stub, "w") as f:
        f.write(_STUB.format(script=repr(script), config=repr(config)))
    if not shscript:
        return [sys.executable, "-u", stub, *script_args]
    shscript = os.path.abspath(shscript)
    try:
        with open(shscript) as f:
            text = f.read()
    except OSError as e:
        raise SystemExit(f"traincheck-collect: error: cannot read the shell launcher {shscript}: {e.strerror}")
    base = os.path.basename(script)
    # The token naming the script (bare, relative or absolute) becomes "$TRAINCHECK_LAUNCHER", the stub's
    # absolute path, expanded by the shell as one word (unquoted or inside double quotes alike).
    pattern = re.compile(r"(?<![\w./-])[\w./-]*" + re.escape(base) + r"(?![\w.-])")
    if not pattern.search(text):
        raise SystemExit(f"traincheck-collect: error: {shscript} does not mention the pyscript {base!r}")
    launcher = os.path.join(out, "_traincheck_" + os.path.basename(shscript))
    with output_files.open_output(launcher, "w") as f:
        f.write(pattern.sub(lambda m: _launcher_reference(text, m), text))
    # `env NAME=value` takes the path as one argv entry: no shell ever parses it.
    return ["env", f"{LAUNCHER_ENV}={os.path.abspath(stub)}", "bash", launcher, *script_args]


def _launcher_reference(text: str, m: re.Match) -> str:
    """$TRAINCHECK_LAUNCHER as one word: quoted, unless the token already stands in double quotes."""
    in_quotes = m.start() > 0 and text[m.start() - 1] == '"' and m.end() < len(text) and text[m.end()] == '"'
    return ("$" if in_quotes else '"$') + LAUNCHER_ENV + ("" if in_quotes else '"')


def _child_env(output_dir: str, script_dir: str) -> dict:
    env = dict(os.environ)
    env["TRAINCHECK_OUTPUT_DIR"] = output_dir
    env.setdefault("PYTORCH_JIT", "0")  # torch.jit.script cannot compile wrapped functions
    env["PYTHONUNBUFFERED"] = "1"
    # The script's own directory first (as `python script.py` would), keeping the caller's path.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (script_dir, env.get("PYTHONPATH", "")) if p)
    return env


def _report_instrumentation(output_dir: str, reported: set) -> None:
    from traincheck.instrument.selective import summary_line

    for path in sorted(glob.glob(os.path.join(output_dir, "instrumentation_summary_*.json"))):
        if path in reported:
            continue
        try:
            with open(path) as f:
                summary = json.load(f)
        except (OSError, json.JSONDecodeError):
            continue  # still being written
        reported.add(path)
        if len(reported) > 1 or summary.get("mode") != "selective":
            continue  # one line per run: every rank reports the same resolution
        print(f"traincheck-collect: {summary_line(summary)}", file=sys.stderr, flush=True)
        for api in summary.get("at_start", summary).get("missing_apis", []):
            print(f"traincheck-collect: warning: API not found in this library version: {api}", file=sys.stderr)


# Saved output: program_output.txt is both streams merged in arrival order, as the original writes it;
# program_stdout.txt and program_stderr.txt keep each stream apart. Every chunk reaches the files as it
# arrives (flushed), so a collector killed with SIGKILL leaves what the program printed so far.
OUTPUT_FILES = {"merged": "program_output.txt", "stdout": "program_stdout.txt", "stderr": "program_stderr.txt"}


class _SavedOutput:
    """The program's output files. A write that fails (a full disk) stops saving, with one warning: the
    program runs on and its output still reaches the terminal."""

    def __init__(self, output_dir: str):
        self.files = {}
        try:
            for k, name in OUTPUT_FILES.items():
                self.files[k] = output_files.open_output(os.path.join(output_dir, name), "wb")
        except BaseException:
            self.close()
            raise
        self.failed = False

    def write(self, keys, data: bytes) -> None:
        if self.failed:
            return
        try:
            for k in keys:
                self.files[k].write(data)
                self.files[k].flush()
        except OSError as e:
            self.failed = True
            print(f"traincheck-collect: warning: cannot save the program's output ({e.strerror}); it is shown here only",
                  file=sys.stderr, flush=True)

    def close(self) -> None:
        for f in self.files.values():
            try:
                f.close()
            except OSError:
                pass


def _pump(stream, terminal, saved: _SavedOutput, key: str, lock: threading.Lock) -> None:
    for chunk in iter(lambda: stream.read1(65536), b""):
        with lock:
            terminal.write(chunk)
            terminal.flush()
            saved.write((key, "merged"), chunk)


def run(command: list[str], output_dir: str, script_dir: str) -> int:
    saved = _SavedOutput(output_dir)
    try:
        proc = subprocess.Popen(
            command,
            cwd=output_dir,
            env=_child_env(output_dir, script_dir),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        forwarded = _forward_signals(proc)
        reported: set = set()
        stop = threading.Event()
        watcher = threading.Thread(target=_watch_summary, args=(output_dir, reported, stop), daemon=True)
        watcher.start()
        lock = threading.Lock()
        err_pump = threading.Thread(target=_pump, args=(proc.stderr, sys.stderr.buffer, saved, "stderr", lock), daemon=True)
        err_pump.start()
        try:
            _pump(proc.stdout, sys.stdout.buffer, saved, "stdout", lock)
            err_pump.join()
            code = proc.wait()
        finally:
            stop.set()
            watcher.join()
            for sig, previous in forwarded:
                signal.signal(sig, previous)
        _report_instrumentation(output_dir, reported)
        # A process killed by signal N reads as exit code 128+N, as in a shell.
        exit_code = code if code >= 0 else 128 - code
        _report_online_check(output_dir, exit_code)
        saved.write(("merged",), f"Program exited with code {exit_code}\n".encode())
    finally:
        saved.close()
    return exit_code


def _report_online_check(output_dir: str, exit_code: int) -> None:
    """The in-process check's totals and violation table over every process of the run: the engine adds up
    the processes' summary_<pid>.json (cpp/check/online/process_summaries.h); this only prints them."""
    try:
        from traincheck import _online
    except ImportError as e:  # the extension failed to load: nothing was checked in-process either
        print(f"traincheck-collect: warning: no online check summary ({e})", file=sys.stderr)
        return
    report = _online.run_online_check_report(os.path.join(output_dir, "online_check"), exit_code=exit_code)
    if report is None:
        return
    lines, table = report
    for line in lines.splitlines():
        print(f"traincheck-collect: {line}", file=sys.stderr, flush=True)
    if table:
        print(table, end="", file=sys.stderr, flush=True)


def _watch_summary(output_dir: str, reported: set, stop: threading.Event) -> None:
    while not stop.wait(0.2):
        _report_instrumentation(output_dir, reported)
        if reported:
            return


def _forward_signals(proc: subprocess.Popen) -> list:
    """SIGINT and SIGTERM go to the program's whole process group (it runs in its own session)."""
    previous = []

    def forward(signum, frame):
        try:
            os.killpg(proc.pid, signum)
        except ProcessLookupError:
            pass

    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous.append((sig, signal.getsignal(sig)))
            signal.signal(sig, forward)
    return previous
