"""Tables, CSV files, `report.md` and the false-positive plot from the rows of every repetition."""

from __future__ import annotations

import csv
import statistics
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

from eval.detection import layout as L
from eval.detection.culprits import names_culprit
from eval.detection.results import IN_PROCESS, OFFLINE, DetectionRow, FpRow
from eval.detection.run_level import fp_run_level, run_level

COLUMNS = [("ours", OFFLINE), ("ours", IN_PROCESS), ("original", OFFLINE)]


def write_csv(path: Path, rows: list) -> None:
    if not rows:
        path.write_text("")
        return
    dicts = [r.as_dict() for r in rows]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(dicts[0]))
        w.writeheader()
        w.writerows(dicts)


def _group(rows: list[DetectionRow]):
    """(case, setting, tool, mode) -> rows of every repetition, in repetition order."""
    out = defaultdict(list)
    for r in sorted(rows, key=lambda r: r.rep):
        out[(r.case, r.setting, r.tool, r.mode)].append(r)
    return out


def differs(reps: list[DetectionRow]) -> bool:
    """True when the verdict is not the same in every repetition (status, detected, latency, counts)."""
    sigs = {(r.status, r.detected, r.latency, r.violated_on_bug, r.violated_on_good) for r in reps}
    return len(sigs) > 1


def cell(reps: list[DetectionRow]) -> str:
    """A table cell for one (case, setting, tool, mode): the first repetition's verdict, marked when
    repetitions disagree."""
    r = reps[0]
    if r.status != "ok":
        text = "time limit" if "time limit" in r.status else "failed"
    elif r.detected:
        text = f"yes (+{r.latency})"
    else:
        text = "no"
    return text + (" ≠" if differs(reps) else "")


@dataclass
class Summary:
    tool: str
    mode: str
    setting: str
    cases: int
    detected: int
    not_finished: int
    median_latency: float | None
    fp_rate_good: float | None       # mean over cases of (invariants violated on the good run / invariants)
    mean_invariants: float | None
    seconds: float                   # infer + check jobs (offline) or in-process runs, first repetition
    nondeterministic: int
    repetitions: int = 1
    # Run-level (eval/detection/run_level.py): each run judged on its own alarms, no twin subtracted.
    correct_alarming: int = 0
    buggy_alarming: int = 0
    clean_catches: int = 0
    clean_catches_after_trigger: int = 0
    median_alarms_correct: float | None = None
    # Caught cases (first repetition) that list culprits, and those whose first alarm names one.
    culprit_caught: int = 0
    culprit_named: int = 0

    @property
    def recall(self) -> float:
        return self.detected / self.cases if self.cases else 0.0

    def as_dict(self) -> dict:
        return {**asdict(self), "recall": round(self.recall, 4)}


def summarize(rows: list[DetectionRow], culprits: dict[str, tuple[str, ...]] | None = None) -> list[Summary]:
    """`culprits`: case name -> the APIs or variables at fault (case.yml), for the culprit rate."""
    groups = _group(rows)
    culprits = culprits or {}
    out = []
    settings = sorted({r.setting for r in rows}, key=lambda s: L.SETTINGS.index(s) if s in L.SETTINGS else 9)
    for setting in settings:
        for tool, mode in COLUMNS:
            keys = [k for k in groups if k[1] == setting and k[2] == tool and k[3] == mode]
            if not keys:
                continue
            firsts = [groups[k][0] for k in keys]
            ok = [r for r in firsts if r.status == "ok"]
            det = [r for r in ok if r.detected]
            blamed = [r for r in det if culprits.get(r.case)]
            lat = [r.latency for r in det if r.latency is not None]
            fps = [r.violated_on_good / r.invariants for r in ok if r.invariants]
            invs = [r.invariants for r in ok if r.invariants is not None]
            # Inference and offline checks are shared by the cases of one invariant file: count each once.
            per_file = {}
            for r in firsts:
                per_file.setdefault(r.invariant_file or r.case, []).append(r)
            secs = sum((rs[0].infer_seconds or 0) + (rs[0].check_seconds or 0) if mode == OFFLINE else
                       sum(x.check_seconds or 0 for x in rs) for rs in per_file.values())
            out.append(Summary(tool, mode, setting, len(firsts), len(det), len(firsts) - len(ok),
                               statistics.median(lat) if lat else None,
                               statistics.mean(fps) if fps else None,
                               statistics.mean(invs) if invs else None, secs,
                               sum(1 for k in keys if differs(groups[k])),
                               min(len(groups[k]) for k in keys), **asdict(run_level(firsts)),
                               culprit_caught=len(blamed),
                               culprit_named=sum(names_culprit(r.caught_by, culprits[r.case]) for r in blamed)))
    return out


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.2f}%"


def _md_table(header: list[str], body: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in body]
    return "\n".join(lines)


def case_table(rows: list[DetectionRow]) -> str:
    groups = _group(rows)
    cases = sorted({(r.case, r.bug_class, r.trigger_step) for r in rows})
    present = [(t, m) for t, m in COLUMNS if any(k[2] == t and k[3] == m for k in groups)]
    settings = [s for s in L.SETTINGS if any(k[1] == s for k in groups)]
    header = ["case", "trigger"] + [f"{t} {m} {s}" for s in settings for t, m in present]
    body = []
    for name, _cls, trigger in cases:
        row = [name, str(trigger)]
        for s in settings:
            for t, m in present:
                reps = groups.get((name, s, t, m))
                row.append(cell(reps) if reps else "-")
        body.append(row)
    return _md_table(header, body)


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:g}"


def run_level_table(summaries: list[Summary]) -> str:
    """The headline: each run judged on its own alarms, as a user without a twin good run sees it."""
    header = ["tool", "check", "setting", "correct runs alarming", "buggy runs alarming",
              "clean catches (at/after trigger)", "median alarms (correct run)", "recall (vs twin)",
              "first alarm names a culprit"]
    body = [[s.tool, s.mode, s.setting, f"{s.correct_alarming}/{s.cases}", f"{s.buggy_alarming}/{s.cases}",
             f"{s.clean_catches}/{s.cases} ({s.clean_catches_after_trigger})", _num(s.median_alarms_correct),
             f"{s.detected}/{s.cases}", f"{s.culprit_named}/{s.culprit_caught}" if s.culprit_caught else "-"]
            for s in summaries]
    return _md_table(header, body)


def summary_table(summaries: list[Summary]) -> str:
    header = ["tool", "check", "setting", "recall", "median latency (steps)", "FP rate (good run)",
              "invariants (mean)", "not finished", "verdicts differing across repetitions", "wall s (infer+check)"]
    body = [[s.tool, s.mode, s.setting, f"{s.detected}/{s.cases} ({100 * s.recall:.0f}%)",
             "-" if s.median_latency is None else f"{s.median_latency:g}", _pct(s.fp_rate_good),
             "-" if s.mean_invariants is None else f"{s.mean_invariants:.0f}", str(s.not_finished),
             f"{s.nondeterministic} of {s.cases}" if s.repetitions > 1 else "- (1 repetition)",
             f"{s.seconds:.0f}"] for s in summaries]
    return _md_table(header, body)


def caught_by_table(rows: list[DetectionRow]) -> str:
    header = ["case", "setting", "tool", "check", "first step", "violated bug/good", "caught by"]
    body = []
    for r in sorted(rows, key=lambda r: (r.case, r.setting, r.tool, r.mode)):
        if r.rep != min(x.rep for x in rows):
            continue
        if r.status != "ok":
            body.append([r.case, r.setting, r.tool, r.mode, "-", "-", r.status])
            continue
        body.append([r.case, r.setting, r.tool, r.mode, "-" if r.first_step is None else str(r.first_step),
                     f"{r.violated_on_bug}/{r.violated_on_good}",
                     (r.caught_relation + ": " + r.caught_by.replace("|", "\\|")[:160]) if r.detected else "-"])
    return _md_table(header, body)


@dataclass
class FpSummary:
    tool: str
    train_size: int
    programs: int
    mean_fp_rate: float | None
    max_fp_rate: float | None
    mean_invariants: float | None
    not_finished: int
    programs_alarming: int = 0       # run-level: checked programs with >= 1 violated invariant
    median_alarms: float | None = None


def summarize_fp(rows: list[FpRow]) -> list[FpSummary]:
    out = []
    first_rep = min((r.rep for r in rows), default=1)
    for tool in ("ours", "original"):
        for k in sorted({r.train_size for r in rows}):
            sel = [r for r in rows if r.tool == tool and r.train_size == k and r.rep == first_rep]
            if not sel:
                continue
            ok = [r for r in sel if r.status == "ok"]
            rates = [r.fp_rate for r in ok]
            out.append(FpSummary(tool, k, len(sel), statistics.mean(rates) if rates else None,
                                 max(rates) if rates else None,
                                 statistics.mean(r.invariants for r in ok) if ok else None, len(sel) - len(ok),
                                 **asdict(fp_run_level(sel))))
    return out


def fp_table(summaries: list[FpSummary]) -> str:
    header = ["tool", "trained on (programs)", "checked programs", "programs alarming", "median alarms",
              "invariants (mean)", "mean FP rate", "max FP rate", "not finished"]
    body = [[s.tool, str(s.train_size), str(s.programs), f"{s.programs_alarming}/{s.programs}", _num(s.median_alarms),
             "-" if s.mean_invariants is None else f"{s.mean_invariants:.0f}",
             _pct(s.mean_fp_rate), _pct(s.max_fp_rate), str(s.not_finished)] for s in summaries]
    return _md_table(header, body)


def fp_program_table(rows: list[FpRow]) -> str:
    first_rep = min((r.rep for r in rows), default=1)
    sel = [r for r in rows if r.rep == first_rep]
    keys = sorted({(r.tool, r.train_size) for r in sel})
    programs = sorted({r.program for r in sel})
    header = ["program"] + [f"{t} k={k}" for t, k in keys]
    by = {(r.tool, r.train_size, r.program): r for r in sel}
    body = []
    for p in programs:
        line = [p]
        for t, k in keys:
            r = by.get((t, k, p))
            line.append("-" if r is None else (r.status if r.status != "ok" else f"{r.violated}/{r.invariants}"))
        body.append(line)
    return _md_table(header, body)


def plot_fp(summaries: list[FpSummary], out_dir: Path) -> list[Path]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.2))
    tools = [t for t in ("ours", "original") if any(s.tool == t for s in summaries)]
    sizes = sorted({s.train_size for s in summaries})
    width = 0.8 / max(1, len(tools))
    for i, tool in enumerate(tools):
        vals = []
        for k in sizes:
            s = next((s for s in summaries if s.tool == tool and s.train_size == k), None)
            vals.append(100 * s.mean_fp_rate if s and s.mean_fp_rate is not None else 0.0)
        xs = [j + (i - (len(tools) - 1) / 2) * width for j in range(len(sizes))]
        ax.bar(xs, vals, width=width, label=tool)
        for x, v in zip(xs, vals):
            ax.annotate(f"{v:.2f}", (x, v), ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(sizes)), [str(k) for k in sizes])
    ax.set_xlabel("bug-free programs inferred from")
    ax.set_ylabel("false-positive rate (%)")
    ax.axhline(1.0, linestyle="--", color="grey", linewidth=0.8)
    ax.legend(fontsize=8)
    fig.tight_layout()
    paths = [out_dir / "fp_rate.png", out_dir / "fp_rate.pdf"]
    for p in paths:
        fig.savefig(p, dpi=150)
    plt.close(fig)
    return paths


RUN_LEVEL_NOTE = (
    "Each run judged on its own alarms (invariants it violates, at any step), as a user who has no good run of the "
    "same program sees it; first repetition. Correct run: the case's third good run. Clean catch: the buggy run "
    "alarms and its correct twin (same seed) raises no alarm; in brackets, those whose buggy run alarms at or after "
    "the trigger step. Recall (vs twin) subtracts the twin's alarms, which a user does not have. Culprit: of the "
    "caught cases (vs twin), those whose first alarm names an API or variable at fault (case.yml `culprits`, "
    "eval/detection/culprits.py).\n")


def write_report(out_dir: Path, det_rows: list[DetectionRow], fp_rows: list[FpRow], setup: str,
                 culprits: dict[str, tuple[str, ...]] | None = None) -> str:
    summaries = summarize(det_rows, culprits)
    fp_sums = summarize_fp(fp_rows)
    write_csv(out_dir / "detection.csv", det_rows)
    write_csv(out_dir / "fp.csv", fp_rows)
    write_csv(out_dir / "summary.csv", summaries)
    if fp_sums:
        plot_fp(fp_sums, out_dir)
    nondet = sorted(k for k, reps in _group(det_rows).items() if differs(reps))
    parts = [
        "# Detection evaluation\n", setup, "\n## Summary: run by run\n", run_level_table(summaries),
        "\n\n" + RUN_LEVEL_NOTE, "\n## Summary: against the twin good run\n", summary_table(summaries),
        "\n\nRecall: cases whose buggy run violates an invariant, at or after the trigger step, that the good run of the "
        "same seed does not violate. Latency: that first step minus the trigger step. FP rate (good run): invariants "
        "violated on the third good run over all invariants, averaged over cases.\n",
        "\n## Per case\n", "Cell: detected (latency in steps); ≠ marks a verdict that differs between repetitions.\n\n",
        case_table(det_rows),
        "\n\n## What caught each bug (first repetition)\n", caught_by_table(det_rows),
        "\n\n## False positives: infer from k bug-free programs, check other bug-free programs\n",
        fp_table(fp_sums) if fp_sums else "(not run)",
        "\n\nPer checked program (violated / invariants):\n\n" + fp_program_table(fp_rows) if fp_rows else "",
        "\n\n![false-positive rate](fp_rate.png)\n" if fp_sums else "",
        "\n## Verdicts that differ between repetitions\n",
        "\n".join(f"- {c} / {s} / {t} {m}" for c, s, t, m in nondet) or "none",
        "\n",
    ]
    text = "".join(parts)
    (out_dir / "report.md").write_text(text)
    return text
