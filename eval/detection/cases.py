"""Case discovery: every folder of `cases/` that holds a `case.yml` and a `main.py` is one silent-bug case
(the contract is `cases/README.md`). A malformed `case.yml` is an error that names the file and the field."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

CASES_DIR = Path(__file__).resolve().parent / "cases"
LAUNCHERS = ("python", "torchrun")


class CaseError(ValueError):
    pass


@dataclass(frozen=True)
class Case:
    name: str
    folder: Path
    description: str
    bug_class: str
    trigger_step: int
    launcher: str = "python"
    models_to_track: tuple[str, ...] = ()
    modules_to_instr: tuple[str, ...] = ()  # collect's -t; empty: its default (torch)
    args: tuple[str, ...] = ()
    symptom: str = ""
    culprits: tuple[str, ...] = ()  # the APIs or variables at fault (culprits.py): name fragments or fnmatch patterns

    @property
    def script(self) -> Path:
        return self.folder / "main.py"

    @property
    def shell_launcher(self) -> Path | None:
        """The launcher script given to `traincheck-collect -s` (torchrun cases), else None."""
        return self.folder / "run.sh" if self.launcher == "torchrun" else None


@dataclass(frozen=True)
class _Field:
    name: str
    kind: type
    required: bool = True
    default: object = None


_FIELDS = (
    _Field("description", str),
    _Field("bug_class", str),
    _Field("trigger_step", int),
    _Field("launcher", str, False, "python"),
    _Field("models_to_track", list, False, []),
    _Field("modules_to_instr", list, False, []),
    _Field("args", list, False, []),
    _Field("symptom", str, False, ""),
    _Field("culprits", list, False, []),
)


def load_case(folder: Path) -> Case:
    path = folder / "case.yml"
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise CaseError(f"{path}: not valid YAML: {e}") from None
    if not isinstance(data, dict):
        raise CaseError(f"{path}: expected a mapping of fields, got {type(data).__name__}")
    unknown = sorted(set(data) - {f.name for f in _FIELDS})
    if unknown:
        raise CaseError(f"{path}: unknown field(s) {', '.join(unknown)}")
    values = {}
    for f in _FIELDS:
        if f.name not in data or data[f.name] is None:
            if f.required:
                raise CaseError(f"{path}: field '{f.name}' is missing")
            values[f.name] = f.default
            continue
        value = data[f.name]
        if f.kind is int and isinstance(value, bool) or not isinstance(value, f.kind):
            raise CaseError(f"{path}: field '{f.name}' must be {f.kind.__name__}, got {value!r}")
        values[f.name] = value
    if values["trigger_step"] < 0:
        raise CaseError(f"{path}: field 'trigger_step' must be >= 0 (steps are numbered from 1; 0 is what runs "
                        "before the first step, the initialisation)")
    if values["launcher"] not in LAUNCHERS:
        raise CaseError(f"{path}: field 'launcher' must be one of {', '.join(LAUNCHERS)}, got {values['launcher']!r}")
    if not (folder / "main.py").is_file():
        raise CaseError(f"{folder}: no main.py")
    if values["launcher"] == "torchrun" and not (folder / "run.sh").is_file():
        raise CaseError(f"{path}: launcher is torchrun but {folder / 'run.sh'} is missing")
    return Case(name=folder.name, folder=folder, description=values["description"], bug_class=values["bug_class"],
                trigger_step=values["trigger_step"], launcher=values["launcher"],
                models_to_track=tuple(str(m) for m in values["models_to_track"]),
                modules_to_instr=tuple(str(m) for m in values["modules_to_instr"]),
                args=tuple(str(a) for a in values["args"]), symptom=values["symptom"],
                culprits=tuple(str(c) for c in values["culprits"]))


def discover(cases_dir: Path = CASES_DIR, only: list[str] | None = None) -> list[Case]:
    """The cases of `cases_dir`, sorted by name; `only` keeps those names (an unknown name is an error)."""
    folders = sorted(p.parent for p in cases_dir.glob("*/case.yml"))
    cases = [load_case(f) for f in folders]
    if only:
        by_name = {c.name: c for c in cases}
        missing = [n for n in only if n not in by_name]
        if missing:
            raise CaseError(f"unknown case(s) {', '.join(missing)}; known: {', '.join(sorted(by_name))}")
        cases = [by_name[n] for n in only]
    return cases
