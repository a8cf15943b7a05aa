"""Counts stated in the docs are the code's: a doc that says how many relations, step claims or TRAINCHECK_*
settings there are says the number the source has. The sources: the relation registry
(cpp/relations/registry.cpp, implemented_relations()), the relations that are StepClaimRelation's
(cpp/relations/*.h) and python/traincheck/settings.py's SETTINGS. Where a doc can name the source instead
of a number ("the relations of the registry"), it should: nothing then goes stale."""
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RELATIONS = ROOT / "cpp" / "relations"

NUMBER_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}
NUMBER = r"(\d+|" + "|".join(NUMBER_WORDS) + r")"


def as_int(text: str) -> int:
    return int(text) if text.isdigit() else NUMBER_WORDS[text.lower()]


def registry_entries() -> list[tuple[str, bool]]:
    """(relation type, ours) per entry of implemented_relations(), in the order of its `all` vector. An
    entry is ours when its declaration says `// ours`; the rest are the original's."""
    source = (RELATIONS / "registry.cpp").read_text()
    body = source[source.index("implemented_relations()"):]
    body = body[:body.index("return all;")]
    declared = {m.group(2): (m.group(1), "// ours" in m.group(3))
                for m in re.finditer(r"static const (\w+) (\w+)\b[^;]*;([^\n]*)", body) if m.group(1) != "std"}
    listed = re.search(r"all\s*=\s*\{(.*?)\}", body, re.S).group(1)
    entries = [declared[name] for name in re.findall(r"&(\w+)", listed)]
    assert entries, "no relations found in registry.cpp's implemented_relations()"
    return entries


def step_claim_types() -> set[str]:
    """Relation classes that are StepClaimRelation's, one per claim declared in cpp/record/step_claims.h
    (tests/cpp/relations/step_claims_test.cpp pairs them)."""
    types = set()
    for header in RELATIONS.glob("*.h"):
        types |= set(re.findall(r"class (\w+)\s+(?:final\s+)?:\s*public StepClaimRelation\b", header.read_text()))
    return types


def declared_step_claims() -> list[str]:
    """The claims' names in kStepClaims (cpp/record/step_claims.h)."""
    source = (ROOT / "cpp" / "record" / "step_claims.h").read_text()
    table = source[source.index("kStepClaims[] = {"):]
    table = table[:table.index("\n};")]
    return re.findall(r'^\s*\{"(\w+)", "_TRAINCHECK_', table, re.M)


def test_each_declared_step_claim_has_its_relation_class():
    assert len(declared_step_claims()) == len(step_claim_types()) > 0


def settings_count() -> int:
    source = (ROOT / "python" / "traincheck" / "settings.py").read_text()
    block = source[source.index("SETTINGS = {"):]
    block = block[:block.index(")}")]
    return len(re.findall(r"\bSetting\(\"TRAINCHECK_", block))


def doc_files() -> list[Path]:
    """The Markdown files of the repository (tracked, or new and not ignored), results files left out:
    those record a run, with the counts of their day."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.md"], cwd=ROOT,
                            capture_output=True, text=True)
    if listed.returncode == 0:
        paths = [ROOT / line for line in listed.stdout.splitlines()]
    else:
        paths = [p for p in ROOT.rglob("*.md") if not any(part.startswith(("build", ".")) for part in
                                                           p.relative_to(ROOT).parts)]
    return sorted(p for p in paths if p.is_file() and "results" not in p.relative_to(ROOT).parts)


def expected_counts() -> dict[str, int]:
    entries = registry_entries()
    claims = step_claim_types()
    return {
        "relations": len(entries),
        "original": sum(1 for _, ours in entries if not ours),
        "ours": sum(1 for _, ours in entries if ours),
        "claims": sum(1 for relation_type, _ in entries if relation_type in claims),
        "settings": settings_count(),
    }


# (kind, pattern): the first group is the number. Checked in this order; a span matched by one is not
# matched again by a later, looser one ("eight relations of the original" is not a total).
PATTERNS = [
    ("original", rf"\b{NUMBER} (?:relation templates|relations|relation names) of the original\b"),
    ("ours", rf"\b{NUMBER} of ours\b"),
    ("claims", rf"\b{NUMBER} (?:step claims|claims at optimizer steps|claims)\b"),
    ("settings", rf"\b{NUMBER} (?:TRAINCHECK_\\?\* )?settings\b"),
    ("relations", rf"\b{NUMBER} (?:implemented |registered )?relations\b(?!')"),
]
# A phrase may wrap: any run of white space stands for the spaces above.
PATTERNS = [(kind, pattern.replace(" ", r"\s+")) for kind, pattern in PATTERNS]


def stated_counts(text: str) -> list[tuple[str, int, int]]:
    """(kind, number, offset) of every count the text states."""
    taken: list[range] = []
    found = []
    for kind, pattern in PATTERNS:
        for m in re.finditer(pattern, text, re.I):
            if any(m.start() in span for span in taken):
                continue
            taken.append(range(m.start(), m.end()))
            found.append((kind, as_int(m.group(1)), m.start()))
    return found


def test_the_sources_are_read():
    counts = expected_counts()
    assert counts["relations"] == counts["original"] + counts["ours"]
    assert counts["original"] > 0 and counts["ours"] > 0
    assert counts["claims"] > 0, "no StepClaimRelation subclass found in cpp/relations/*.h"
    assert counts["settings"] > 0


def test_stated_counts_parse():
    text = ("the eight relation templates of the\noriginal, and six of ours; the five claims; 3 relations; "
            "six TRAINCHECK_* settings; the three relations' alarms")
    assert [(k, n) for k, n, _ in stated_counts(text)] == [
        ("original", 8), ("ours", 6), ("claims", 5), ("settings", 6), ("relations", 3)]


@pytest.mark.parametrize("doc", doc_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_counts_in_docs_match_the_source(doc):
    counts = expected_counts()
    text = doc.read_text(errors="replace")
    wrong = [f"{doc.relative_to(ROOT)}:{text.count(chr(10), 0, offset) + 1}: states {number} ({kind}), the "
             f"source has {counts[kind]}"
             for kind, number, offset in stated_counts(text) if number != counts[kind]]
    assert not wrong, "\n".join(wrong)
