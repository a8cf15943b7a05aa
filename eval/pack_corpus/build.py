"""Builds the shipped invariant pack from the pack corpus (docs/relations.md §The shipped pack):

    python -m eval.pack_corpus.build --out /tmp/pack [--traces /tmp/pack_traces] [-j 2] [--install]

1. collect: every program under `traincheck-collect` (full instrumentation), cached in `--traces`
   (collect.py; a rebuild after a vetting change collects nothing);
2. infer: each program's own candidates, `traincheck-infer` on its trace alone (`<out>/candidates/`);
3. check: all candidates, merged by identity, on each program's trace (`<out>/checks/<name>/`) (`--revet`
   skips 1-3 and vets the candidates and checks an earlier build left in `--out` again);
4. vet: `traincheck-vet` keeps what passed on `--min-programs` programs of `--min-families` families and
   was violated on none, of the relations that generalise: vetted without each program in turn, a relation's
   invariants alarm on at most `--max-relation-loo-share` of the programs (rule (e)) (`<out>/pack.json`,
   `<out>/vet_report.json`, rule (c) for every program);
5. `--sweep K...`: pack size and rule (c) for other `--min-programs` values, from the same checks;
6. `--loo-sample N`: rule (c) verified for N programs by a real leave-one-out: the pack vetted without
   the program, then `traincheck-check` of that pack on the program's trace (`<out>/loo/`);
7. `--leave-family-out FAMILY...`: the same for a whole model family: the pack learned and vetted without
   any of its programs, checked on each of them (`<out>/lfo/<family>/`). A family shares a model's
   internals, so this measures how the pack holds on a kind of program it never saw.

`--install` copies the pack and its metadata (torch version, corpus commit, rule, sizes) to
python/traincheck/packs/default.json (+ default.meta.json), the pack `-i pack:default` names.

`--extend NAME...` vets the installed pack on programs added to the corpus since its build, before the
next full build: each is collected, the pack checked on it, and what one of them violates dropped
(`traincheck-vet --extend`: rule (a) on the grown corpus; their own candidates join at the next build).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from eval.detection.jobs import Job, run_all
from eval.pack_corpus import collect as collecting
from eval.pack_corpus.manifest import load

REPO = Path(__file__).resolve().parents[2]
INSTALLED_PACK = REPO / "python" / "traincheck" / "packs" / "default.json"


@dataclass(frozen=True)
class Entry:
    """One program the pack learns from and is vetted on: its name, family and collected trace folder."""
    name: str
    family: str
    trace: Path


@dataclass(frozen=True)
class Rule:
    min_programs: int = 3
    min_families: int = 2
    max_relation_loo_share: float = 1.0


def _exe(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise SystemExit(f"pack: {name} not found on PATH (install the project: pip install .)")
    return found


def infer(entries: list[Entry], out: Path, workers: int, time_limit: float) -> None:
    """Each program's own candidates; a candidate file newer than every file of its trace is reused."""
    jobs = []
    for e in entries:
        target = out / "candidates" / f"{e.name}.json"
        newest = max((f.stat().st_mtime for f in e.trace.iterdir()), default=0.0)
        if target.is_file() and target.stat().st_mtime >= newest:
            continue
        cmd = [_exe("traincheck-infer"), "-f", str(e.trace), "-o", str(target), "-j", "1"]
        jobs.append(Job(e.name, cmd, out / "logs" / f"infer_{e.name}.log", out / "candidates", time_limit))
    failed = [j.label for j in run_all(jobs, "infer", workers) if not j.ok]
    if failed:
        raise SystemExit(f"pack: inference failed for {failed} (logs in {out / 'logs'})")


def check(entries: list[Entry], out: Path, workers: int, time_limit: float) -> Path:
    """Checks the merged candidates on each program's trace; returns the merged candidate file."""
    candidate_files = [str(out / "candidates" / f"{e.name}.json") for e in entries]
    merged = out / "candidates.json"
    checks = out / "checks"
    if checks.exists():
        shutil.rmtree(checks)

    def job(e: Entry, invariants: list[str]) -> Job:
        cmd = [_exe("traincheck-check"), "-f", str(e.trace), "-i", *invariants,
               "-o", str(checks / e.name), "--no-html-report", "-j", "1"]
        return Job(e.name, cmd, out / "logs" / f"check_{e.name}.log", out, time_limit)

    # The first check merges the candidate files (check writes the merged set as invariants.json).
    first = run_all([job(entries[0], candidate_files)], "check", 1)[0]
    if not first.ok:
        raise SystemExit(f"pack: checking {entries[0].name} failed (see {first.log})")
    shutil.copyfile(checks / entries[0].name / "invariants.json", merged)
    failed = [j.label for j in run_all([job(e, [str(merged)]) for e in entries[1:]], "check", workers) if not j.ok]
    if failed:
        raise SystemExit(f"pack: checking failed for {failed} (logs in {out / 'logs'})")
    return merged


def programs_file(entries: list[Entry], out: Path, path: Path) -> Path:
    with open(path, "w") as f:
        for e in entries:
            f.write(json.dumps({"name": e.name, "family": e.family,
                                "learned": str(out / "candidates" / f"{e.name}.json"),
                                "checked": str(out / "checks" / e.name / e.trace.name)}) + "\n")
    return path


def vet(candidates: Path, programs: Path, pack: Path, report: Path | None, rule: Rule) -> None:
    cmd = [_exe("traincheck-vet"), "--candidates", str(candidates), "--programs", str(programs), "-o", str(pack),
           "--min-programs", str(rule.min_programs), "--min-families", str(rule.min_families),
           "--max-relation-loo-share", str(rule.max_relation_loo_share)]
    if report is not None:
        cmd += ["--report", str(report)]
    cmd += ["--vetted-on", corpus_versions()]
    subprocess.run(cmd, check=True)


def corpus_versions() -> str:
    """The versions the corpus runs on, LIB=VERSION,...: invariants about a library's implementation
    record them (traincheck-vet --vetted-on), and runs on other versions do not check them."""
    from importlib.metadata import PackageNotFoundError, version

    found = []
    for name in ("torch", "transformers", "accelerate", "lightning"):
        try:
            found.append(f"{name}={version(name)}")
        except PackageNotFoundError:
            pass
    return ",".join(found)


def held_out_alarms(held_out: list[Entry], entries: list[Entry], out: Path, folder: Path,
                    rule: Rule) -> dict[str, list[str]]:
    """The pack learned and vetted without `held_out` (<folder>/pack.json), checked on each held-out
    program's trace: per program, the identities of the invariants it violated."""
    folder.mkdir(parents=True, exist_ok=True)
    pack = folder / "pack.json"
    left_out = {e.name for e in held_out}
    others = [q for q in entries if q.name not in left_out]
    vet(out / "candidates.json", programs_file(others, out, folder / "programs.jsonl"), pack, None, rule)
    result = {}
    for e in held_out:
        check_dir = folder / "check" / e.name
        subprocess.run([_exe("traincheck-check"), "-f", str(e.trace), "-i", str(pack), "-o", str(check_dir),
                        "--no-html-report"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        summary = json.loads((check_dir / e.trace.name / "violations_summary.json").read_text())
        result[e.name] = sorted(v["display_name"] for v in summary["violations"])
    return result


def loo_verify(sample: list[Entry], entries: list[Entry], out: Path, rule: Rule) -> dict[str, int]:
    """Rule (c) for real: the pack vetted without each sampled program, checked on that program."""
    result = {}
    for e in sample:
        result[e.name] = len(held_out_alarms([e], entries, out, out / "loo" / e.name, rule)[e.name])
        print(f"[loo] {e.name}: {result[e.name]} invariants of the pack vetted without it violated", file=sys.stderr)
    return result


def leave_family_out(families: list[str], entries: list[Entry], out: Path, rule: Rule) -> dict[str, dict]:
    """Per family: the size of the pack built without it and, per program of the family, how many of that
    pack's invariants it violates (a correct program: each one a false alarm)."""
    result = {}
    for family in families:
        members = [e for e in entries if e.family == family]
        if not members:
            raise SystemExit(f"pack: no collected program of family {family!r}")
        folder = out / "lfo" / family
        alarms = held_out_alarms(members, entries, out, folder, rule)
        size = sum(1 for line in (folder / "pack.json").read_text().splitlines() if line.strip())
        result[family] = {"pack_invariants": size, "programs": len(members),
                          "programs_alarming": sum(1 for a in alarms.values() if a),
                          "alarms": {name: len(a) for name, a in alarms.items()},
                          "violated": sorted({name for a in alarms.values() for name in a})}
        print(f"[lfo] {family}: pack of {size} built without its {len(members)} programs; "
              f"{result[family]['programs_alarming']} of them alarm {result[family]['alarms']}", file=sys.stderr)
    return result


def sweep(out: Path, entries: list[Entry], rule: Rule, min_programs: list[int]) -> list[dict]:
    """Pack size and rule (c) (from the check results) for other --min-programs values, on the same checks:
    how a threshold generalises, judged on the corpus alone."""
    rows = []
    programs = programs_file(entries, out, out / "programs.jsonl")
    for k in min_programs:
        folder = out / "sweep" / f"k{k}"
        folder.mkdir(parents=True, exist_ok=True)
        vet(out / "candidates.json", programs, folder / "pack.json", folder / "vet_report.json",
            Rule(k, rule.min_families, rule.max_relation_loo_share))
        report = json.loads((folder / "vet_report.json").read_text())
        alarms = sorted(len(v) for v in report["leave_one_out"].values())
        rows.append({"min_programs": k, "kept": report["kept"],
                     "loo_programs_alarming": sum(1 for a in alarms if a), "loo_programs": len(alarms),
                     "loo_median_alarms": alarms[len(alarms) // 2] if alarms else 0,
                     "loo_max_alarms": alarms[-1] if alarms else 0})
        print(f"[sweep] {rows[-1]}", file=sys.stderr)
    return rows


def build(entries: list[Entry], out: Path, rule: Rule, workers: int = 1, time_limit: float = 1800.0,
          revet: bool = False) -> Path:
    """Infers, checks and vets; returns the pack (<out>/pack.json; the report is <out>/vet_report.json).
    `revet`: vets the candidates and checks an earlier build left in `out` again (after a change of the
    vetting rules only), inferring and checking nothing."""
    if len({e.name for e in entries}) != len(entries) or len(entries) < 2:
        raise SystemExit("pack: need at least 2 programs, each named once")
    if revet:
        merged = out / "candidates.json"
        missing = [e.name for e in entries if not (out / "checks" / e.name / e.trace.name).is_dir()]
        if not merged.is_file() or missing:
            raise SystemExit(f"pack: --revet needs an earlier build in {out}: no candidates.json or no check of {missing}")
    else:
        infer(entries, out, workers, time_limit)
        merged = check(entries, out, workers, time_limit)
    pack = out / "pack.json"
    vet(merged, programs_file(entries, out, out / "programs.jsonl"), pack, out / "vet_report.json", rule)
    return pack


def metadata(entries: list[Entry], pack: Path, report: Path) -> dict:
    import torch

    def version(module: str) -> str | None:
        try:
            return __import__(module).__version__
        except ImportError:
            return None

    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    vet_report = json.loads(report.read_text())
    return {
        "name": "default",
        "built_on": {"torch": torch.__version__, "transformers": version("transformers"),
                     "lightning": version("lightning")},
        # Only the version it was built on is known good: the pack names torch internals.
        "torch_versions": [torch.__version__.split("+")[0]],
        "corpus_commit": commit,
        "programs": [e.name for e in entries],
        "rule": vet_report["rule"],
        "invariants": sum(1 for line in pack.read_text().splitlines() if line.strip()),
        "by_relation": _kept_per_relation(vet_report),
        "by_class": {c: t["kept"] for c, t in vet_report["by_class"].items() if t["kept"]},
        # Rule (e) and the pack's false-alarm estimate on a program it never saw (rule (c)).
        "classes_not_generalising": sorted(c for c, t in vet_report["by_class"].items() if not t["generalises"]),
        "leave_one_out_programs_alarming": sum(1 for v in vet_report["leave_one_out"].values() if v),
    }


def extend(entries: list[Entry], out: Path, pack: Path, workers: int, time_limit: float) -> Path:
    """The installed pack vetted on added programs: checked on each, what one violates dropped."""
    checks = out / "extension_checks"
    if checks.exists():
        shutil.rmtree(checks)
    jobs = [Job(e.name, [_exe("traincheck-check"), "-f", str(e.trace), "-i", str(pack), "-o", str(checks / e.name),
                         "--no-html-report", "-j", "1"], out / "logs" / f"extension_check_{e.name}.log", out, time_limit)
            for e in entries]
    failed = [j.label for j in run_all(jobs, "check", workers) if not j.ok]
    if failed:
        raise SystemExit(f"pack: checking failed for {failed} (logs in {out / 'logs'})")
    programs = out / "extension_programs.jsonl"
    with open(programs, "w") as f:
        for e in entries:
            f.write(json.dumps({"name": e.name, "family": e.family, "checked": str(checks / e.name / e.trace.name)}) + "\n")
    extended = out / "pack.json"
    subprocess.run([_exe("traincheck-vet"), "--extend", "--candidates", str(pack), "--programs", str(programs),
                    "-o", str(extended), "--report", str(out / "extension_report.json")], check=True)
    return extended


def extended_metadata(meta: dict, report: dict) -> dict:
    """The installed pack's metadata with the added programs, and the pack's sizes as traincheck-vet
    --extend reports them."""
    added = [name for name in report["added_programs"] if name not in meta.get("programs", [])]
    return {**meta, "programs": [*meta.get("programs", []), *added],
            "extended_with": [*meta.get("extended_with", []), *added],
            "invariants": report["kept"], "by_relation": report["kept_by_relation"],
            "by_class": report["kept_by_class"]}


def _kept_per_relation(vet_report: dict) -> dict[str, int]:
    """How many invariants the pack keeps per relation (the report counts them per hypothesis class)."""
    kept: dict[str, int] = {}
    for d in vet_report["decisions"]:
        if d["verdict"] == "kept":
            kept[d["relation"]] = kept.get(d["relation"], 0) + 1
    return dict(sorted(kept.items()))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("names", nargs="*", help="programs to build from (default: every program of the manifest)")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--traces", type=Path, help="the traces cache (default: <out>/traces)")
    p.add_argument("-j", "--jobs", type=int, default=1)
    p.add_argument("--no-collect", action="store_true", help="build from the programs already in the cache only")
    # The defaults are the shipped pack's rule (docs/relations.md §The shipped pack).
    p.add_argument("--min-programs", type=int, default=12)
    p.add_argument("--min-families", type=int, default=3)
    p.add_argument("--max-relation-loo-share", type=float, default=0.05,
                   help="rule (e): ship a hypothesis class (a relation; its hypotheses with argument values apart) "
                        "only if, vetted without each program in turn, its invariants alarm on at most this share "
                        "of the programs (1: every class)")
    p.add_argument("--loo-sample", type=int, default=0, help="programs whose leave-one-out is verified by a check")
    p.add_argument("--leave-family-out", nargs="*", default=[], metavar="FAMILY",
                   help="also build the pack without each named model family and check it on that family's programs")
    p.add_argument("--sweep", type=int, nargs="*", default=[], metavar="K",
                   help="also report pack size and leave-one-out alarms for these --min-programs values")
    p.add_argument("--revet", action="store_true",
                   help="vet the candidates and checks of an earlier build in --out again (after a change of the "
                        "vetting rules): nothing is collected, inferred or checked")
    p.add_argument("--extend", action="store_true",
                   help="vet the installed pack on the named programs (added to the corpus since its build) and "
                        "drop what they violate; nothing is inferred")
    p.add_argument("--time-limit", type=float, default=1800.0)
    p.add_argument("--install", action="store_true", help=f"copy the pack to {INSTALLED_PACK.relative_to(REPO)}")
    args = p.parse_args(argv)

    out = args.out.resolve()
    traces = (args.traces or out / "traces").resolve()
    out.mkdir(parents=True, exist_ok=True)
    by_name = {q.name: q for q in load()}
    unknown = [n for n in args.names if n not in by_name]
    if unknown:
        raise SystemExit(f"pack: no program(s) {unknown} in the manifest")
    programs = [by_name[n] for n in args.names] if args.names else list(by_name.values())
    if args.no_collect or args.revet:
        programs = [q for q in programs if collecting.is_collected(traces, q)]
    else:
        programs = collecting.collect(programs, traces, args.jobs, args.time_limit)
    entries = [Entry(q.name, q.family, collecting.trace_dir(traces, q)) for q in programs]
    if args.extend:
        if not args.names or not entries:
            raise SystemExit("pack: --extend needs the added programs' names, collected")
        pack = extend(entries, out, INSTALLED_PACK, args.jobs, args.time_limit)
        meta = extended_metadata(json.loads(INSTALLED_PACK.with_suffix(".meta.json").read_text()),
                                 json.loads((out / "extension_report.json").read_text()))
        (out / "pack.meta.json").write_text(json.dumps(meta, indent=1) + "\n")
        if args.install:
            shutil.copyfile(pack, INSTALLED_PACK)
            shutil.copyfile(out / "pack.meta.json", INSTALLED_PACK.with_suffix(".meta.json"))
            print(f"[pack] installed {INSTALLED_PACK}", file=sys.stderr)
        return 0
    if len(programs) < 2:
        raise SystemExit(f"pack: {len(programs)} program(s) collected in {traces}: need at least 2")
    print(f"[pack] building from {len(programs)} programs", file=sys.stderr)
    rule = Rule(args.min_programs, args.min_families, args.max_relation_loo_share)
    pack = build(entries, out, rule, args.jobs, args.time_limit, revet=args.revet)
    meta = metadata(entries, pack, out / "vet_report.json")
    if args.loo_sample:
        meta["leave_one_out_verified"] = loo_verify(entries[: args.loo_sample], entries, out, rule)
    if args.leave_family_out:
        meta["leave_family_out"] = leave_family_out(args.leave_family_out, entries, out, rule)
    if args.sweep:
        meta["min_programs_sweep"] = sweep(out, entries, rule, args.sweep)
    (out / "pack.meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    if args.install:
        INSTALLED_PACK.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(pack, INSTALLED_PACK)
        shutil.copyfile(out / "pack.meta.json", INSTALLED_PACK.with_suffix(".meta.json"))
        print(f"[pack] installed {INSTALLED_PACK}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
