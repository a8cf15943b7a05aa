"""Vetting invariants of relations the pack gains without a full build: each corpus program is run as a user
runs it (`traincheck-collect -p main.py -i <candidates>`: no model named, the check in-process, selective
instrumentation), its own trace is given to `traincheck-infer` for the candidates' relations, and a candidate
is kept when it held on at least `--min-programs` programs (inferred there) and no program violated it in
process. A full build (build.py) collects every program in full and infers every relation, an hour and more
on two cores; a relation over the collector's claims needs only the claims, which selective mode records.

    python -m eval.pack_corpus.vet_in_process --candidates claims.json --out /tmp/vet_claims -j 2 [--install]

`<out>/report.json`: per candidate, the programs it held on and those that violated it; `<out>/kept.json`: the
kept candidates (JSON lines, `held_on_programs` and `num_positive_examples` summed over programs);
`--install` appends them to the installed pack (an invariant of the same relation and params is replaced).
"""

from __future__ import annotations

import argparse
import glob
import json
import shutil
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from eval.detection.jobs import Job, run_all
from eval.detection.tools import collector_command
from eval.pack_corpus.build import INSTALLED_PACK, _exe
from eval.pack_corpus.collect import ATTEMPTS, program_seed
from eval.pack_corpus.manifest import Program, load


def identity(invariant: dict) -> str:
    """The key the in-process summary names an invariant by: its relation and params."""
    return invariant["relation"] + "|" + ",".join(json.dumps(p, separators=(",", ":")) for p in invariant["params"])


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def run_programs(programs: list[Program], candidates: Path, out: Path, workers: int, time_limit: float) -> list[Program]:
    """Each program run under the collector with the candidates in-process; a failed run is run again, up to
    ATTEMPTS times in all (collect.py: gloo can abort a rank at exit). Returns the programs that ran."""
    def job(p: Program) -> Job:
        run_dir = out / "runs" / p.name
        if run_dir.exists():
            shutil.rmtree(run_dir)
        run_dir.mkdir(parents=True)
        cmd = collector_command(p.script, run_dir / "trace", p.shell_launcher, (), who="pack")
        cmd += ["-i", str(candidates), "--", *p.args, "--seed", str(program_seed(p))]
        return Job(p.name, cmd, out / "logs" / f"{p.name}.log", run_dir, time_limit)

    pending, done = list(programs), []
    for _ in range(ATTEMPTS):
        by_name = {p.name: p for p in pending}
        finished = run_all([job(p) for p in pending], "run", workers)
        done += [by_name[j.label] for j in finished if j.ok]
        pending = [by_name[j.label] for j in finished if not j.ok]
        if not pending:
            break
    return done


def judge(programs: list[Program], candidates: list[dict], out: Path, workers: int, time_limit: float) -> dict:
    """Per candidate: the programs whose own trace it held on (inferred there, with its positive examples) and
    those that violated it in process."""
    relations = sorted({c["relation"] for c in candidates})
    jobs = [Job(p.name, [_exe("traincheck-infer"), "-f", str(out / "runs" / p.name / "trace"), "--enable-relation",
                         *relations, "-o", str(out / "runs" / p.name / "inferred.json"), "-j", "1"],
                out / "logs" / f"{p.name}.infer.log", out, time_limit) for p in programs]
    run_all(jobs, "infer", workers)
    report = {identity(c): {"held_on": {}, "violated_on": []} for c in candidates}
    for p in programs:
        run_dir = out / "runs" / p.name
        inferred = run_dir / "inferred.json"
        for inv in read_jsonl(inferred) if inferred.exists() else []:
            if identity(inv) in report:
                report[identity(inv)]["held_on"][p.name] = inv.get("num_positive_examples", 0)
        for summary in glob.glob(str(run_dir / "trace" / "online_check" / "summary_*.json")):
            for key in json.loads(Path(summary).read_text()).get("violated_invariants", []):
                if key in report and p.name not in report[key]["violated_on"]:
                    report[key]["violated_on"].append(p.name)
    return report


def kept(candidates: list[dict], report: dict, min_programs: int) -> list[dict]:
    out = []
    for c in candidates:
        r = report[identity(c)]
        if r["violated_on"] or len(r["held_on"]) < min_programs:
            continue
        out.append({**c, "num_positive_examples": sum(r["held_on"].values()), "num_negative_examples": 0,
                    "held_on_programs": len(r["held_on"])})
    return out


def install(invariants: list[dict], programs: list[str], pack: Path = INSTALLED_PACK) -> None:
    """Appends `invariants` to the pack, replacing one of the same identity, and records them in its metadata
    (`vetted_in_process`: the relations added so and the programs they were vetted on; the pack's counts)."""
    new = {identity(i) for i in invariants}
    merged = [*(i for i in read_jsonl(pack) if identity(i) not in new), *invariants]
    pack.write_text("".join(json.dumps(i) + "\n" for i in merged))
    meta_path = pack.with_name(pack.name.replace(".json", ".meta.json"))
    meta = json.loads(meta_path.read_text())
    by_relation: dict[str, int] = {}
    for i in merged:
        by_relation[i["relation"]] = by_relation.get(i["relation"], 0) + 1
    added = sorted({*meta.get("vetted_in_process", {}).get("relations", []), *(i["relation"] for i in invariants)})
    # A claim relation's invariants are one hypothesis class, named after the relation (no argument values).
    by_class = {**meta.get("by_class", {}), **{r: by_relation[r] for r in {i["relation"] for i in invariants}}}
    meta.update(invariants=len(merged), by_relation=dict(sorted(by_relation.items())), by_class=dict(sorted(by_class.items())),
                vetted_in_process={"relations": added, "programs": programs})
    meta_path.write_text(json.dumps(meta, indent=1) + "\n")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("names", nargs="*", help="programs (default: every program of the manifest)")
    p.add_argument("--candidates", type=Path, required=True, help="invariant file (JSON lines)")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("-j", "--jobs", type=int, default=1)
    p.add_argument("--min-programs", type=int, default=2)
    p.add_argument("--time-limit", type=float, default=900.0)
    p.add_argument("--install", action="store_true", help=f"append the kept candidates to {INSTALLED_PACK.name}")
    args = p.parse_args(argv)
    programs = load()
    if args.names:
        unknown = set(args.names) - {q.name for q in programs}
        if unknown:
            p.error(f"not in the manifest: {sorted(unknown)}")
        programs = [q for q in programs if q.name in args.names]
    candidates = read_jsonl(args.candidates)
    ran = run_programs(programs, args.candidates.resolve(), args.out.resolve(), args.jobs, args.time_limit)
    missing = sorted({q.name for q in programs} - {q.name for q in ran})
    report = judge(ran, candidates, args.out.resolve(), args.jobs, args.time_limit)
    good = kept(candidates, report, args.min_programs)
    (args.out / "report.json").write_text(json.dumps({"programs": [q.name for q in ran], "failed": missing,
                                                      "candidates": report}, indent=1))
    (args.out / "kept.json").write_text("".join(json.dumps(i) + "\n" for i in good))
    for key, r in report.items():
        print(f"{key.split('|')[0]}: held on {len(r['held_on'])}, violated on {len(r['violated_on'])} "
              f"{r['violated_on'][:6]}")
    print(f"{len(good)} of {len(candidates)} kept; {len(ran)} programs ran" + (f", failed: {missing}" if missing else ""))
    if missing:
        print("not installed: some programs did not run", file=sys.stderr)
        return 1
    if args.install:
        install(good, [q.name for q in ran])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
