"""What an `-i` argument names: an invariant file's path, or a shipped pack by name, `pack:<name>`
(docs/formats.md §Shipped packs). Packs are package data, traincheck/packs/<name>.json beside this file;
$TRAINCHECK_PACK_DIR, when set, is searched first (the native commands search the same way:
cpp/common/invariant_source.h)."""

from __future__ import annotations

import os
from pathlib import Path

PACK_PREFIX = "pack:"
PACK_DIR_SETTING = "TRAINCHECK_PACK_DIR"
SHIPPED_PACKS = Path(__file__).resolve().parent / "packs"


class PackNotFound(ValueError):
    pass


def pack_search_folders() -> list[Path]:
    folders = []
    if os.environ.get(PACK_DIR_SETTING):
        folders.append(Path(os.environ[PACK_DIR_SETTING]))
    folders.append(SHIPPED_PACKS)
    return folders


def resolve(argument: str) -> str:
    """`argument` unchanged unless it is `pack:<name>`; then the pack's file (absolute)."""
    if not argument.startswith(PACK_PREFIX):
        return argument
    name = argument[len(PACK_PREFIX):]
    if not name or "/" in name or os.sep in name:
        raise PackNotFound(f"-i {argument}: a pack name is a plain name, e.g. pack:default")
    folders = pack_search_folders()
    for folder in folders:
        if (folder / f"{name}.json").is_file():
            return str((folder / f"{name}.json").resolve())
    searched = ", ".join(str(f) for f in folders)
    raise PackNotFound(f"-i {argument}: no pack '{name}.json' in {searched} (set {PACK_DIR_SETTING} to a folder holding it)")


def shipped_packs() -> list[str]:
    """The names of the packs in the wheel."""
    return sorted(p.stem for p in SHIPPED_PACKS.glob("*.json") if not p.name.endswith(".meta.json"))
