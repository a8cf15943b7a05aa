"""The shipped invariant pack (docs/relations.md §The shipped pack): a small pack builds from
traces of programs and keeps only what none of them violates; the shipped pack is package data, loads,
plans, and every command's -i finds it by name (`pack:default`)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
E2E = REPO / "tests" / "cpp" / "data" / "e2e"
sys.path.insert(0, str(REPO))


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _violated(trace: Path, invariants: str, out: Path, env=None) -> int:
    proc = subprocess.run(["traincheck-check", "-f", str(trace), "-i", invariants, "-o", str(out), "--no-html-report"],
                          capture_output=True, text=True, env={**os.environ, **(env or {})})
    assert proc.returncode == 0, proc.stderr
    return json.loads((out / trace.name / "violations_summary.json").read_text())["distinct_invariants_violated"]


def test_a_small_pack_builds_and_keeps_only_what_no_program_violates(tmp_path):
    from eval.pack_corpus.build import Entry, Rule, build

    # Three tiny synthetic runs as three programs of two families; buggy_run breaks "Adam.step calls
    # _foreach_add_" and zero_grad's effect (tests/cpp/data/e2e/README.md), which the two others hold.
    entries = [Entry("run1", "mlp", E2E / "good_run1"), Entry("run2", "cnn", E2E / "good_run2"),
               Entry("bug", "mlp", E2E / "buggy_run")]
    pack = build(entries, tmp_path / "build", Rule(min_programs=2, min_families=2))
    kept = _lines(pack)
    report = json.loads((tmp_path / "build" / "vet_report.json").read_text())
    candidates = _lines(tmp_path / "build" / "candidates.json")
    assert kept and len(kept) < len(candidates)
    assert report["kept"] == len(kept) and report["candidates"] == len(candidates)
    violated = {d["description"] for d in report["decisions"] if d["violated_on"]}
    assert any("_foreach_add_" in v for v in violated)
    assert not violated & {inv["text_description"] for inv in kept}
    for d in report["decisions"]:
        if d["verdict"] == "kept":
            assert len(d["passed_on"]) >= 2 and len(d["families_passed"]) >= 2 and not d["violated_on"]
    # Every program it was vetted on checks clean with it.
    for e in entries:
        assert _violated(e.trace, str(pack), tmp_path / f"check_{e.name}") == 0
    # Rule (c): leaving the buggy run out, the pack keeps what it violates, and it no longer checks clean.
    assert report["leave_one_out"]["bug"]
    assert report["leave_one_out"]["run1"] == []
    # Rule (e): allowing no left-out program to alarm, the classes whose invariants the buggy run broke
    # when left out ship nothing, and the pack left is silent on it.
    strict = build(entries, tmp_path / "strict", Rule(min_programs=2, min_families=2, max_relation_loo_share=0.0))
    strict_report = json.loads((tmp_path / "strict" / "vet_report.json").read_text())
    excluded = {c for c, t in strict_report["by_class"].items() if not t["generalises"]}
    assert {c.removesuffix(" with argument values") for c in excluded} == {
        inv.split("|")[0] for inv in report["leave_one_out"]["bug"]}
    assert all(strict_report["by_class"][c]["kept"] == 0 for c in excluded)
    assert strict_report["leave_one_out"]["bug"] == []
    kept_classes = {d["class"] for d in strict_report["decisions"] if d["verdict"] == "kept"}
    assert kept_classes and not excluded & kept_classes

    # Leaving the mlp family out (both its programs), the pack is what the cnn program alone learned and
    # holds, and the buggy mlp program, which the family-out pack never saw, violates it.
    from eval.pack_corpus.build import leave_family_out

    result = leave_family_out(["mlp"], entries, tmp_path / "build", Rule(min_programs=1, min_families=1))["mlp"]
    assert result["programs"] == 2 and result["pack_invariants"] > 0
    assert result["alarms"]["bug"] > 0 and result["programs_alarming"] >= 1
    assert any("_foreach_add_" in name for name in result["violated"])
    family_out = {inv["text_description"] for inv in _lines(tmp_path / "build" / "lfo" / "mlp" / "pack.json")}
    learned_by_cnn = {inv["text_description"] for inv in _lines(tmp_path / "build" / "candidates" / "run2.json")}
    assert family_out <= learned_by_cnn
    with pytest.raises(SystemExit, match="no collected program of family 'gnn'"):
        leave_family_out(["gnn"], entries, tmp_path / "build", Rule())


def test_the_shipped_pack_loads_and_plans():
    from traincheck import invariant_sources
    from traincheck.instrument import selective

    assert "default" in invariant_sources.shipped_packs()
    path = Path(invariant_sources.resolve("pack:default"))
    invariants = _lines(path)
    assert invariants
    plan = selective.build_plan([str(path)])
    assert plan.funcs and len(plan.invariants) == len(invariants)
    meta = json.loads(path.with_name("default.meta.json").read_text())
    assert meta["invariants"] == len(invariants)
    assert meta["torch_versions"] and meta["corpus_commit"]
    assert sum(meta["by_relation"].values()) == len(invariants) == sum(meta["by_class"].values())
    assert {inv["relation"] for inv in invariants} == set(meta["by_relation"])
    assert not set(meta["classes_not_generalising"]) & set(meta["by_class"])
    assert meta["leave_one_out_programs_alarming"] <= len(meta["programs"])


def test_check_finds_the_pack_by_name_and_names_a_missing_one(tmp_path):
    from traincheck import invariant_sources

    shipped = Path(invariant_sources.resolve("pack:default"))
    assert _violated(E2E / "good_run1", "pack:default", tmp_path / "by_name") >= 0
    assert len(_lines(tmp_path / "by_name" / "invariants.json")) == len(_lines(shipped))
    # $TRAINCHECK_PACK_DIR is searched first.
    (tmp_path / "packs").mkdir()
    (tmp_path / "packs" / "mine.json").write_text(shipped.read_text().splitlines()[0] + "\n")
    _violated(E2E / "good_run1", "pack:mine", tmp_path / "mine", env={"TRAINCHECK_PACK_DIR": str(tmp_path / "packs")})
    assert len(_lines(tmp_path / "mine" / "invariants.json")) == 1
    proc = subprocess.run(["traincheck-check", "-f", str(E2E / "good_run1"), "-i", "pack:nope", "-o", str(tmp_path / "x")],
                          capture_output=True, text=True)
    assert proc.returncode == 1 and "pack:nope" in proc.stderr and "TRAINCHECK_PACK_DIR" in proc.stderr
    with pytest.raises(invariant_sources.PackNotFound, match="nope"):
        invariant_sources.resolve("pack:nope")
    assert invariant_sources.resolve("plain.json") == "plain.json"


def test_collect_refuses_a_missing_pack(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("print('hi')\n")
    proc = subprocess.run([sys.executable, "-m", "traincheck.collect_trace", "-p", str(script), "--output-dir",
                           str(tmp_path / "out"), "-i", "pack:nope"], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 2 and "pack:nope" in proc.stderr
    assert not (tmp_path / "out").exists()
