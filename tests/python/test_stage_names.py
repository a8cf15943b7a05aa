"""The stage names are written twice: python/traincheck/meta_vars.py's VALID_STAGES,
which `annotate_stage` accepts, and cpp/invariant/precondition.cpp's all_stage_names(), from which the
analyzer writes the stage clauses of learned invariants (docs/formats.md §Stage restriction). A stage
that only one of them knows would be recorded and never restricted, or restricted and never recorded."""
import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def python_stages() -> list[str]:
    tree = ast.parse((ROOT / "python/traincheck/meta_vars.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["VALID_STAGES"]:
            return list(ast.literal_eval(node.value))
    raise AssertionError("meta_vars.py assigns no VALID_STAGES")


def cpp_stages() -> list[str]:
    text = (ROOT / "cpp/invariant/precondition.cpp").read_text()
    body = re.search(r"all_stage_names\(\)\s*\{(.*?)\n\}", text, re.S)
    assert body, "precondition.cpp defines no all_stage_names()"
    return re.findall(r'"([^"\\]*)"', body.group(1))


def test_the_recorder_and_the_analyzer_know_the_same_stages():
    python, cpp = python_stages(), cpp_stages()
    assert len(python) == len(set(python)) == 8 and len(cpp) == len(set(cpp))
    assert sorted(python) == sorted(cpp), f"meta_vars.py: {sorted(python)}\nprecondition.cpp: {sorted(cpp)}"


def test_the_analyzer_lists_them_sorted():
    # An inverted stage clause lists the stages not seen in this order (add_stage_info), as files hold it.
    assert cpp_stages() == sorted(cpp_stages())
