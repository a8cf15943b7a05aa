"""Docs that cannot fall behind: every `docs/<file>.md §<section>` citation and every
relative Markdown link in the repository resolves (the file exists inside the repository, the cited
heading or anchor exists in it), every path to a Markdown file named in prose or comments exists, and
every header of each cpp/ folder appears in its folder README's table."""
import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Folders that hold no source of ours: build trees, virtual environments, caches.
SKIPPED_DIRS = {".git", "build", "dist", "__pycache__", "node_modules", ".pytest_cache"}
# What a comment continues with on its next line, per file type (a citation may wrap).
COMMENT_MARKERS = {".h": r"(?://+|\*)", ".cpp": r"(?://+|\*)", ".py": r"#+", ".sh": r"#+", ".txt": r"#+",
                   ".cmake": r"#+", ".toml": r"#+", ".yml": r"#+", ".yaml": r"#+", ".md": None}


def source_files() -> list[Path]:
    """The repository's files (tracked, or new and not ignored), or every file outside build folders where
    this is no git checkout."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, text=True)
    if listed.returncode == 0:
        paths = [ROOT / line for line in listed.stdout.splitlines()]
        return sorted(p for p in paths if p.suffix in COMMENT_MARKERS and p.is_file())
    files = []
    for folder, dirs, names in os.walk(ROOT):
        dirs[:] = [d for d in dirs if not (d in SKIPPED_DIRS or d.startswith((".", "build")) or d.endswith(".egg-info"))]
        files += [Path(folder, n) for n in names if Path(n).suffix in COMMENT_MARKERS]
    return sorted(files)


# This file is left out: its own test writes broken citations on purpose.
FILES = [p for p in source_files() if p != Path(__file__).resolve()]


def line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def joined(text: str, suffix: str) -> str:
    """The text with each line break (and the comment marker that continues a comment) read as one space,
    so that a citation wrapped over two lines reads as on one. Positions shift; callers search it."""
    marker = COMMENT_MARKERS.get(suffix)
    pattern = r"[ \t]*\n[ \t]*" + (rf"(?:{marker}[ \t]?)?[ \t]*" if marker else "")
    return re.sub(pattern, " ", text)


def headings(md: Path) -> list[str]:
    """The section headings of a Markdown file (outside code blocks), backticks removed."""
    found, fenced = [], False
    for line in md.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and (m := re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)):
            found.append(m.group(1).replace("`", ""))
    return found


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def anchors(md: Path) -> set[str]:
    seen: dict[str, int] = {}
    result = set()
    for heading in headings(md):
        slug = github_anchor(heading)
        result.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
        seen[slug] = seen.get(slug, 0) + 1
    return result


def inside_repo(path: Path) -> bool:
    try:
        path.resolve().relative_to(ROOT)
        return True
    except ValueError:
        return False


def resolve(name: str, citing: Path) -> Path | None:
    """A cited path: relative to the citing file's folder or to one above it (up to the repository root),
    or, for a bare docs file name, in docs/. None when no such file is inside the repository."""
    bases = [citing.parent, *[p for p in citing.parent.parents if inside_repo(p)]]
    if "/" not in name:
        bases.append(ROOT / "docs")
    for base in bases:
        candidate = base / name
        if inside_repo(candidate) and candidate.is_file():
            return candidate.resolve()
    return None


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


# `docs/<file>.md §<section>`, then any `, §<other section>` continuing the same citation. A `§<` is a
# template (a README saying how to cite), not a citation.
CITATION = re.compile(r"(?<![\w./-])((?:[\w.-]+/)*[\w-]+\.md)\s*§(?!<)")
CONTINUATION = re.compile(r"\s*(?:,|;|and|or)\s*§")


def match_heading(text: str, pos: int, target_headings: list[str]) -> int | None:
    """End of the longest heading of the target that the text at pos starts with (a whole word)."""
    best = None
    for heading in target_headings:
        end = pos + len(heading)
        if text.startswith(heading, pos) and (end == len(text) or not re.match(r"\w", text[end])):
            best = end if best is None or end > best else best
    return best


def section_citation_problems(path: Path, text: str | None = None) -> list[str]:
    """What is wrong with the § citations of a file (of text, as if it were that file's)."""
    text = joined(path.read_text(encoding="utf-8", errors="replace") if text is None else text, path.suffix)
    problems = []
    for m in CITATION.finditer(text):
        where = f"{rel(path)}: `{text[m.start():m.end() + 40].strip()}`"
        target = resolve(m.group(1), path)
        if target is None:
            problems.append(f"{where}: {m.group(1)} is no file in the repository")
            continue
        target_headings = headings(target)
        pos = m.end()
        while True:
            end = match_heading(text, pos, target_headings)
            if end is None:
                problems.append(f"{where}: {rel(target)} has no heading `{text[pos:pos + 40]}...`")
                break
            more = CONTINUATION.match(text, end)
            if not more:
                break
            pos = more.end()
    return problems


MARKDOWN_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def markdown_link_problems(path: Path, text: str | None = None) -> list[str]:
    text = path.read_text(encoding="utf-8") if text is None else text
    problems = []
    for m in MARKDOWN_LINK.finditer(text):
        link = m.group(1)
        if re.match(r"[a-z][a-z0-9+.-]*:", link):  # https:, mailto: ...
            continue
        where = f"{rel(path)}:{line_of(text, m.start())}: link `{link}`"
        file_part, _, anchor = link.partition("#")
        target = (path.parent / file_part) if file_part else path
        if not inside_repo(target) or not target.exists():
            problems.append(f"{where}: no such file in the repository")
        elif anchor and target.suffix == ".md" and anchor not in anchors(target):
            problems.append(f"{where}: {rel(target)} has no heading with anchor #{anchor}")
    return problems


# A path to a Markdown file named in prose or a comment: either with a folder (`cpp/check/README.md`)
# or an upper-case name (`README.md`; a design note outside the repository is no citation). Bare lower-case names are files the tools write
# (`report.md`) or a case's contract (`case.md`), and `§` citations of docs files are checked above.
MENTION = re.compile(r"(?<![\w./<>*-])((?:[\w.-]+/)+[\w.-]+\.md|[A-Z][A-Z_]+\.md)(?![\w/])")


def mention_problems(path: Path, text: str | None = None) -> list[str]:
    text = path.read_text(encoding="utf-8", errors="replace") if text is None else text
    return [f"{rel(path)}:{line_of(text, m.start())}: `{m.group(1)}` is no file in the repository"
            for m in MENTION.finditer(text) if resolve(m.group(1), path) is None]


def test_the_scan_sees_the_docs_and_the_sources():
    names = {rel(p) for p in FILES}
    assert {"docs/formats.md", "cpp/check/README.md", "cpp/check/checker.h", "python/traincheck/meta_vars.py"} <= names


def test_the_checks_find_what_is_broken_and_accept_what_is_not():
    """The checks themselves, on text as if written in a header of cpp/check and in docs/README.md: a
    wrapped citation and a continued one resolve; a missing heading, a continuation's missing heading, a
    file outside the repository, a missing anchor and a missing file are each reported."""
    header, readme = ROOT / "cpp/check/checker.h", ROOT / "docs/README.md"
    good = "// (docs/formats.md §Check outputs, §Violation\n// summary; docs/analysis.md §Online check)\n"
    assert section_citation_problems(header, good) == []
    for bad in ("// (docs/formats.md §No such heading)\n", "// (docs/formats.md §Check outputs, §Nowhere)\n",
                "// (docs/formats.md §Check outputsx)\n", "// (../shared/DESIGN.md §Budgets)\n"):
        assert len(section_citation_problems(header, bad)) == 1, bad
    assert markdown_link_problems(readme, "[f](formats.md#check-outputs) [r](../cpp/check/README.md)") == []
    for bad in ("[f](formats.md#no-such-anchor)", "[f](nowhere.md)", "[d](../../shared/DESIGN.md)"):
        assert len(markdown_link_problems(readme, bad)) == 1, bad
    assert mention_problems(header, "// cpp/check/README.md, docs/README.md\n") == []
    assert len(mention_problems(header, "// (DESIGN.md, Style)\n")) == 1


def test_every_section_citation_names_an_existing_heading():
    problems = [p for path in FILES for p in section_citation_problems(path)]
    assert not problems, "\n".join(problems)


def test_every_relative_markdown_link_resolves():
    problems = [p for path in FILES if path.suffix == ".md" for p in markdown_link_problems(path)]
    assert not problems, "\n".join(problems)


def test_every_markdown_file_named_exists_in_the_repository():
    problems = [p for path in FILES for p in mention_problems(path)]
    assert not problems, "\n".join(problems)


def readme_table_text(readme: Path) -> str:
    return "\n".join(line for line in readme.read_text(encoding="utf-8").splitlines() if line.startswith("|"))


CPP_FOLDERS = sorted(p.parent for p in (ROOT / "cpp").glob("*/README.md"))


@pytest.mark.parametrize("folder", CPP_FOLDERS, ids=lambda p: p.name)
def test_every_header_of_a_cpp_folder_is_in_its_readme_table(folder):
    """A header of the folder, or of a subfolder without a README of its own, appears in a table row of
    the folder's README (as `name.h`, `sub/name.h`, or `name.h/.cpp`)."""
    table = readme_table_text(folder / "README.md")
    missing = []
    for header in sorted(folder.rglob("*.h")):
        if any((d / "README.md").exists() for d in header.parents if d != folder and folder in d.parents):
            continue
        name = str(header.relative_to(folder))
        if not re.search(rf"(?<![\w/.]){re.escape(name)}(?!\w)", table):
            missing.append(name)
    assert not missing, f"{rel(folder / 'README.md')} lists no row for: {', '.join(missing)}"


def test_the_header_check_sees_every_cpp_folder_with_headers():
    with_headers = {p.parent.relative_to(ROOT / "cpp").parts[0] for p in (ROOT / "cpp").rglob("*.h")}
    assert with_headers <= {f.name for f in CPP_FOLDERS}, "a cpp/ folder with headers has no README.md"
