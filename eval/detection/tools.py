"""The command lines of the two analyzers and of our collector.

Traces are always written by our collector (`traincheck-collect`); both analyzers read the same trace
folders: ours (`traincheck-infer`/`traincheck-check` on PATH) and, with `--peer-venv`, the original
TrainCheck 0.2.0 installed in its own virtual environment (its console scripts in `<venv>/bin`)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from eval.detection.cases import Case

OURS = "ours"
PEER = "original"


@dataclass(frozen=True)
class Analyzer:
    name: str                      # OURS or PEER
    bin_dir: Path | None           # None: found on PATH

    def _exe(self, command: str) -> str:
        if self.bin_dir is None:
            found = shutil.which(command)
            if found is None:
                raise SystemExit(f"detection: {command} not found on PATH (install the project: pip install .)")
            return found
        exe = self.bin_dir / command
        if not exe.exists():
            raise SystemExit(f"detection: {exe} not found (is --peer-venv a venv with traincheck 0.2.0?)")
        return str(exe)

    def infer(self, trace_folders: list[Path], out_file: Path) -> list[str]:
        return [self._exe("traincheck-infer"), "-f", *map(str, trace_folders), "-o", str(out_file)]

    def check(self, trace_folders: list[Path], invariants: Path, out_dir: Path) -> list[str]:
        return [self._exe("traincheck-check"), "-f", *map(str, trace_folders), "-i", str(invariants), "-o", str(out_dir)]

    @staticmethod
    def failed_log(check_out_dir: Path, trace_folder: Path) -> Path:
        """Both tools write <out>/<trace folder name>/failed.log."""
        return check_out_dir / trace_folder.name / "failed.log"


def ours() -> Analyzer:
    return Analyzer(OURS, None)


def peer(venv: Path) -> Analyzer:
    return Analyzer(PEER, venv / "bin")


def collector_command(script: Path, out_dir: Path, shell_launcher: Path | None = None, models_to_track=(),
                      who: str = "detection") -> list[str]:
    """`traincheck-collect -p script --output-dir out_dir`, with the shell launcher and models to track when
    given: the start of every collect command of the evaluations (detection, pack corpus)."""
    exe = shutil.which("traincheck-collect")
    if exe is None:
        raise SystemExit(f"{who}: traincheck-collect not found on PATH (install the project: pip install .)")
    cmd = [exe, "-p", str(script), "--output-dir", str(out_dir)]
    if shell_launcher is not None:
        cmd += ["-s", str(shell_launcher)]
    if models_to_track:
        cmd += ["--models-to-track", *models_to_track]
    return cmd


def collect_command(case: Case, out_dir: Path, seed: int, bug: bool, invariants: Path | None = None,
                    name_models: bool = True) -> list[str]:
    """Our collector on one variant of a case: full instrumentation, recording only (the traces the
    analyzers learn from and check), or selective with in-process checking when `invariants` is given
    (results in <out_dir>/online_check/failed.log). `name_models`: the case's models to track named, as
    its author would; without, the tracker finds what each optimizer steps, as for a user who names none."""
    cmd = collector_command(case.script, out_dir, case.shell_launcher, case.models_to_track if name_models else ())
    if case.modules_to_instr:
        cmd += ["-t", *case.modules_to_instr]
    cmd += ["-i", str(invariants)] if invariants is not None else ["--no-pack"]
    cmd += ["--", *case.args, "--seed", str(seed)]
    if bug:
        cmd.append("--bug")
    return cmd


def collect_workload_command(script: Path, out_dir: Path, iters: int, seed: int) -> list[str]:
    """Our collector on an overhead workload (eval/perf_overhead/workloads/<name>/main.py), full instrumentation,
    recording only."""
    return collector_command(script, out_dir) + ["--no-pack", "--", "--device", "cpu", "--iters", str(iters),
                                                 "--seed", str(seed)]
