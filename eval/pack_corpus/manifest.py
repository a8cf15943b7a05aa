"""The pack corpus's manifest (`manifest.yml`): each correct training program, its family, how it is
launched and what it exercises. A malformed entry is an error naming the file and the program."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

CORPUS_DIR = Path(__file__).resolve().parent
PROGRAMS_DIR = CORPUS_DIR / "programs"
MANIFEST = CORPUS_DIR / "manifest.yml"
LAUNCHERS = ("python", "torchrun")
STYLES = ("hand", "trainer")
_REQUIRED = ("name", "family", "launcher", "style", "features")
_OPTIONAL = ("models_to_track", "args")


class ManifestError(ValueError):
    pass


@dataclass(frozen=True)
class Program:
    name: str
    family: str
    launcher: str
    style: str
    features: tuple[str, ...]
    models_to_track: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    folder: Path = PROGRAMS_DIR

    @property
    def script(self) -> Path:
        return self.folder / "main.py"

    @property
    def shell_launcher(self) -> Path | None:
        """The launcher script for `traincheck-collect -s` (torchrun programs), else None."""
        return self.folder / "run.sh" if self.launcher == "torchrun" else None

    def plain_command(self, seed: int, python: str = sys.executable) -> list[str]:
        """The program without any tool, from any working directory (its files land there)."""
        tail = [str(self.script), *self.args, "--seed", str(seed)]
        if self.launcher == "torchrun":
            return [python, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", *tail]
        return [python, *tail]


def _strings(path: Path, name: str, field: str, value) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, (str, int, float)) for v in value):
        raise ManifestError(f"{path}: program {name!r}: field '{field}' must be a list of strings, got {value!r}")
    return tuple(str(v) for v in value)


def load(path: Path = MANIFEST, programs_dir: Path = PROGRAMS_DIR) -> list[Program]:
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise ManifestError(f"{path}: not valid YAML: {e}") from None
    if not isinstance(data, dict) or not isinstance(data.get("programs"), list):
        raise ManifestError(f"{path}: expected a mapping with a 'programs' list")
    families = set(data.get("families") or [])
    features = set(data.get("features") or [])
    out, seen = [], set()
    for i, entry in enumerate(data["programs"]):
        if not isinstance(entry, dict):
            raise ManifestError(f"{path}: programs[{i}]: expected a mapping, got {entry!r}")
        name = entry.get("name", f"programs[{i}]")
        missing = [f for f in _REQUIRED if f not in entry]
        unknown = sorted(set(entry) - set(_REQUIRED) - set(_OPTIONAL))
        if missing or unknown:
            raise ManifestError(f"{path}: program {name!r}: missing field(s) {missing}, unknown field(s) {unknown}")
        if name in seen:
            raise ManifestError(f"{path}: program {name!r} is listed twice")
        seen.add(name)
        if entry["family"] not in families:
            raise ManifestError(f"{path}: program {name!r}: family {entry['family']!r} is not one of {sorted(families)}")
        if entry["launcher"] not in LAUNCHERS:
            raise ManifestError(f"{path}: program {name!r}: launcher must be one of {LAUNCHERS}")
        if entry["style"] not in STYLES:
            raise ManifestError(f"{path}: program {name!r}: style must be one of {STYLES}")
        feats = _strings(path, name, "features", entry["features"])
        unknown_feats = sorted(set(feats) - features)
        if unknown_feats:
            raise ManifestError(f"{path}: program {name!r}: feature(s) {unknown_feats} not in the 'features' list")
        folder = programs_dir / name
        prog = Program(name, entry["family"], entry["launcher"], entry["style"], feats,
                       _strings(path, name, "models_to_track", entry.get("models_to_track", [])),
                       _strings(path, name, "args", entry.get("args", [])), folder)
        if not prog.script.is_file():
            raise ManifestError(f"{path}: program {name!r}: {prog.script} does not exist")
        if prog.shell_launcher is not None and not prog.shell_launcher.is_file():
            raise ManifestError(f"{path}: program {name!r}: launcher torchrun but {prog.shell_launcher} is missing")
        out.append(prog)
    return out
