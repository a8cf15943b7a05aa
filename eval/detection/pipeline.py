"""One repetition of the detection evaluation, phase by phase:

1. collect: every case's runs (good seeds 1, 2, 3 and the buggy seed 3) and the overhead workloads,
   with our collector and full instrumentation;
2. infer, per analyzer: *same* pipeline (a case's two good runs), *transfer* (every program outside the
   case's fold), and the false-positive training sets (1, 4, 6 programs); *pack* (ours only) infers
   nothing: the shipped pack is the invariant file, copied in as this phase's job;
3. check offline, per analyzer: each case's buggy run and third good run against both settings'
   invariants; the false-positive check programs against each training set's invariants;
4. check in-process (ours): the buggy run and the third good run collected again with `-i` (selective
   instrumentation, online checking during training), for both settings.

Then the rows of the results tables are read back from the folders (`results.py`)."""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from eval.detection import layout as L
from eval.detection.cases import Case
from eval.detection.jobs import Job, run_all
from eval.detection.tools import OURS, Analyzer, collect_command, collect_workload_command


@dataclass
class Options:
    out: Path
    cases: list[Case]
    workloads: list[str]
    analyzers: list[Analyzer]
    repeats: int = 1
    workers: int = 2
    transfer_folds: int = 2
    fp_train_sizes: tuple[int, ...] = (1, 4, 6)
    fp_check_count: int = 12
    workload_iters: int = 8
    collect_time_limit: float = 300.0
    analyzer_time_limit: float = 600.0
    peer_time_limit: float = 1800.0
    in_process: bool = True
    peer_fp: bool = True            # False: the original runs the detection settings only, not the FP experiment
    settings: tuple[str, ...] = L.SETTINGS
    pack: str = "default"           # the shipped pack of the pack setting (-i pack:<name>)


@dataclass
class RepJobs:
    """Every job of one repetition, by phase, so that results can find each job's status and time."""
    collect: list[Job] = field(default_factory=list)
    infer: dict[tuple, Job] = field(default_factory=dict)       # (tool, setting, key) -> job
    check: dict[tuple, Job] = field(default_factory=dict)       # (tool, setting, key) -> job
    online: dict[tuple, Job] = field(default_factory=dict)      # (setting, case, run_name) -> job


def save_jobs(path: Path, jobs: RepJobs) -> None:
    """The status, time and command of every job of a repetition, so that `--reanalyze` can rebuild the
    results from the folders without running anything again."""
    def enc(job: Job) -> dict:
        return {"label": job.label, "command": job.command, "log": str(job.log), "cwd": str(job.cwd),
                "time_limit": job.time_limit, "status": job.status, "returncode": job.returncode,
                "seconds": job.seconds}
    path.write_text(json.dumps({
        "collect": [enc(j) for j in jobs.collect],
        "infer": [[list(k), enc(j)] for k, j in jobs.infer.items()],
        "check": [[list(k), enc(j)] for k, j in jobs.check.items()],
        "online": [[list(k), enc(j)] for k, j in jobs.online.items()],
    }, indent=1))


def load_jobs(path: Path) -> RepJobs:
    data = json.loads(path.read_text())

    def dec(d: dict) -> Job:
        return Job(d["label"], d["command"], Path(d["log"]), Path(d["cwd"]), d["time_limit"], status=d["status"],
                   returncode=d["returncode"], seconds=d["seconds"])
    return RepJobs(collect=[dec(d) for d in data["collect"]],
                   infer={tuple(k): dec(d) for k, d in data["infer"]},
                   check={tuple(k): dec(d) for k, d in data["check"]},
                   online={tuple(k): dec(d) for k, d in data["online"]})


JOBS_FILE = "jobs.json"


def _time_limit(opts: Options, tool: str) -> float:
    return opts.analyzer_time_limit if tool == OURS else opts.peer_time_limit


def case_invariant_key(opts: Options, setting: str, case: Case) -> str:
    """Which invariant file a case is checked against: its own (same), its fold's (transfer) or the pack."""
    if setting == "same":
        return case.name
    if setting == "pack":
        return opts.pack
    return f"fold{L.transfer_fold(opts.cases, case, opts.transfer_folds)}"


def runs_to_collect(opts: Options) -> dict[str, tuple[int, bool]]:
    """Every run of a case, unless only the pack is evaluated (and no FP experiment): then only the two
    runs that are checked."""
    if set(opts.settings) <= {"pack"} and not opts.fp_train_sizes:
        return {r: L.RUN_NAMES[r] for r in ("good_s3", "bug_s3")}
    return dict(L.RUN_NAMES)


def tool_runs_setting(tool: str, setting: str) -> bool:
    """The pack is ours: the original is not given it (it would need its own inference over the corpus)."""
    return setting != "pack" or tool == OURS


def pack_job(opts: Options, lay: L.RepLayout) -> Job:
    """The pack setting's "inference": the shipped pack copied to where the setting's invariant file goes."""
    from traincheck.invariant_sources import resolve

    src = resolve(f"pack:{opts.pack}")
    out = lay.invariants(OURS, "pack", opts.pack)
    out.parent.mkdir(parents=True, exist_ok=True)
    return Job(f"{OURS} pack {opts.pack}", [sys.executable, "-c", "import shutil, sys; shutil.copyfile(sys.argv[1], sys.argv[2])",
                                             src, str(out)], lay.log("infer", OURS, "pack", opts.pack), out.parent, 60.0)


def run_repetition(opts: Options, rep: int, previous: RepJobs | None = None) -> tuple[L.RepLayout, RepJobs]:
    """Runs one repetition. With `previous` (the jobs of an earlier run of this folder), nothing is
    collected again and only our analyzer runs: the traces and the original's results are kept, so a
    changed analyzer is judged on exactly the traces the original was."""
    lay = L.RepLayout(opts.out / f"rep{rep}")
    jobs = RepJobs()
    tag = f"rep {rep}/{opts.repeats}"

    def kept(phase: dict, tool: str, key: tuple) -> Job | None:
        return phase.get(key) if previous is not None and tool != OURS else None

    # 1. collect
    if previous is not None:
        jobs.collect = previous.collect
    for case in opts.cases if previous is None else ():
        for run_name, (seed, bug) in runs_to_collect(opts).items():
            out = lay.run(case, run_name)
            _clear(out)  # a folder left by an earlier run would mix two runs' traces
            jobs.collect.append(Job(f"{case.name} {run_name}", collect_command(case, out, seed, bug),
                                    lay.log("collect", case.name, run_name), out.parent, opts.collect_time_limit))
    # The workloads are programs of the transfer and FP training sets only.
    needs_workloads = bool(set(opts.settings) - {"pack", "same"}) or bool(opts.fp_train_sizes)
    for w in opts.workloads if previous is None and needs_workloads else ():
        out = lay.workload_run(w)
        _clear(out)
        jobs.collect.append(Job(f"workload {w}", collect_workload_command(L.WORKLOADS_DIR / w / "main.py", out,
                                                                          opts.workload_iters, 1),
                                lay.log("collect", "workload", w), out.parent, opts.collect_time_limit))
    if previous is None:
        run_all(jobs.collect, f"{tag} collect", opts.workers)

    # 2. infer
    programs = lay.programs(opts.cases, opts.workloads)
    split = L.fp_split(programs, opts.fp_train_sizes, opts.fp_check_count) if opts.fp_train_sizes else None
    infer_inputs: dict[tuple[str, str], list[Path]] = {}
    for case in opts.cases if "same" in opts.settings else ():
        infer_inputs[("same", case.name)] = [lay.run(case, "good_s1"), lay.run(case, "good_s2")]
    for fold in range(opts.transfer_folds) if "transfer" in opts.settings else ():
        infer_inputs[("transfer", f"fold{fold}")] = L.transfer_training(lay, opts.cases, opts.workloads, fold,
                                                                       opts.transfer_folds)
    for k in split.train_sizes if split else ():
        infer_inputs[("fp", f"k{k}")] = [p.train_trace for p in split.train[:k]]
    infer_jobs = []
    for tool in opts.analyzers:
        for (setting, key), folders in infer_inputs.items():
            if setting == "fp" and tool.name != OURS and not opts.peer_fp:
                continue
            if (old := kept(previous.infer if previous else {}, tool.name, (tool.name, setting, key))) is not None:
                jobs.infer[(tool.name, setting, key)] = old
                continue
            out = lay.invariants(tool.name, setting, key)
            job = Job(f"{tool.name} infer {setting} {key}", tool.infer(folders, out),
                      lay.log("infer", tool.name, setting, key), out.parent, _time_limit(opts, tool.name))
            _clear(out)
            jobs.infer[(tool.name, setting, key)] = job
            infer_jobs.append(job)
    if "pack" in opts.settings and any(t.name == OURS for t in opts.analyzers):
        jobs.infer[(OURS, "pack", opts.pack)] = job = pack_job(opts, lay)
        infer_jobs.append(job)
    run_all(infer_jobs, f"{tag} infer", opts.workers)

    # 3. check offline: one job per invariant file, over every trace folder checked against it (each
    # analyzer's start-up is paid once, not per trace)
    check_inputs: dict[tuple[str, str], list[Path]] = {}
    for case in opts.cases:
        for setting in opts.settings:
            check_inputs.setdefault((setting, case_invariant_key(opts, setting, case)), []).extend(
                lay.run(case, r) for r in ("bug_s3", "good_s3"))
    for k in split.train_sizes if split else ():
        check_inputs[("fp", f"k{k}")] = [p.check_trace for p in split.check]
    check_jobs = []
    for tool in opts.analyzers:
        for (setting, key), folders in check_inputs.items():
            if (old := kept(previous.check if previous else {}, tool.name, (tool.name, setting, key))) is not None:
                jobs.check[(tool.name, setting, key)] = old
                continue
            inv = jobs.infer.get((tool.name, setting, key))
            if inv is None or not inv.ok:
                continue
            out = lay.check_dir(tool.name, setting, key)
            _clear(out)
            job = Job(f"{tool.name} check {setting} {key} ({len(folders)} traces)",
                      tool.check(folders, lay.invariants(tool.name, setting, key), out),
                      lay.log("check", tool.name, setting, key), out.parent, _time_limit(opts, tool.name))
            jobs.check[(tool.name, setting, key)] = job
            check_jobs.append(job)
    run_all(check_jobs, f"{tag} check", opts.workers)

    # 4. in-process checking (ours only): selective collection with -i, online checker in the writer thread
    online_jobs = []
    if opts.in_process and any(t.name == OURS for t in opts.analyzers):
        for case in opts.cases:
            for setting in opts.settings:
                key = case_invariant_key(opts, setting, case)
                inv = jobs.infer.get((OURS, setting, key))
                if inv is None or not inv.ok:
                    continue
                for run_name in ("bug_s3", "good_s3"):
                    seed, bug = L.RUN_NAMES[run_name]
                    out = lay.online_run(setting, case, run_name)
                    _clear(out)
                    # The pack is zero-setup: checked in-process as a user runs it, naming no model.
                    job = Job(f"in-process {setting} {case.name} {run_name}",
                              collect_command(case, out, seed, bug, lay.invariants(OURS, setting, key),
                                              name_models=setting != "pack"),
                              lay.log("online", setting, case.name, run_name), out.parent, opts.collect_time_limit)
                    jobs.online[(setting, case.name, run_name)] = job
                    online_jobs.append(job)
        run_all(online_jobs, f"{tag} in-process", opts.workers)
    save_jobs(lay.root / JOBS_FILE, jobs)
    return lay, jobs


def _clear(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()
