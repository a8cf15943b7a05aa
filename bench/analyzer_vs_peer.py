"""Our C++ analyzer against the original TrainCheck (PyPI 0.2.0) on the same traces, side by side.

    python bench/analyzer_vs_peer.py [--sizes 10,100] [--rounds 3] [--work DIR] [--peer-venv /tmp/peer]
                                     [--peer-timeout 1800] [--no-peer] [--relations A,B]

1. Traces: OUR collector, full instrumentation (no -i), of tests/python/scripts/mlp_adam.py for each size
   (iterations), three runs per size: run1 and run2 are the inference input, run3 is checked. They go to
   <work>/raw/iters<N>_run<k>; an existing folder with trace files is reused (so a second invocation with
   the same --work only re-times).
2. Compatibility probe (the original must read our traces: docs/formats.md): the original's
   `traincheck-infer` on the raw folders of the smallest size. It cannot, because our collector wraps
   classmethods (the original never does: it only wraps FunctionType found in a class __dict__) and
   records `cls` as positional argument "0"; the original binds positional arguments against the signature
   of the *bound* classmethod (without `cls`) and raises "Too many positional arguments" (for
   `CacheArtifactFactory.register`, called in every run). The probe prints the failing API and one record.
   Both tools are then timed on a *sanitised* copy (<work>/san/...), identical for both: in the records of
   those classmethods argument "0" (`cls`) is dropped and the others shift down, and `cls` is dropped from
   their entry in api_signatures.json, so the two tools bind the same arguments to the same names.
   `--no-sanitize` times on the raw folders (the original will then fail).
3. Timing, per size and round, alternating which tool goes first: infer (`-f run1 run2 -o inv.json
   --enable-relation <--relations, default APIContainRelation>`), check (`-f run3 -i <own inv.json> -o out`, HTML report on for
   both), and a dedicated read measurement of ours: `traincheck-check` with an empty invariant file (read,
   index, write empty results). The original is timed in later rounds only if its first round took less
   than --peer-repeat-below seconds; its runs are killed after --peer-timeout ("timeout").
   Figures are medians over rounds (n is printed).
4. Invariant sets: identity = (relation, params), canonical JSON of params (docs/formats.md §Invariant
   identity). Also a loose identity (relation, API names / var type+attr, without argument constraints),
   to separate "different argument constraints on the same pair" from "pair learned by one tool only".
5. Cross checks (each tool reads the other's invariant files): our `traincheck-check` with the
   original's invariant file on run3, and the original's `traincheck-check` with ours (smallest size only
   unless --cross-all). A good run should give no violation either way; violations are listed by display
   name.

The machine may be shared: run with nothing else heavy on it, or raise --rounds.
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tests" / "python" / "scripts" / "mlp_adam.py"
DEFAULT_RELATIONS = "APIContainRelation"

# Run in the original's interpreter: which of the given API names are classmethods (resolved the way the
# original resolves names at analysis time, with its own torch).
CLASSMETHOD_PROBE = r"""
import inspect, json, sys
from traincheck.invariant.base_cls import load_function_obj
out = []
for name in json.loads(sys.stdin.read()):
    owner, _, attr = name.rpartition(".")
    try:
        obj = load_function_obj(owner)
        if inspect.isclass(obj) and isinstance(inspect.getattr_static(obj, attr), classmethod):
            out.append(name)
    except Exception:
        pass
print(json.dumps(out))
"""


# ---------------------------------------------------------------------------------------------- helpers

def trace_files(folder: Path) -> list[Path]:
    return sorted(Path(p) for p in glob.glob(str(folder / "trace_*.log")))


def trace_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in trace_files(folder)) / 1e6


def run_timed(cmd: list[str], log: Path, env=None, timeout=None, cwd=None) -> tuple[float | None, int]:
    """Wall seconds (None on timeout) and exit status; stdout+stderr go to `log`."""
    start = time.perf_counter()
    with open(log, "w") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, cwd=cwd, start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)  # the whole group of this one child we started
            proc.wait()
            return None, -9
        except BaseException:  # interrupted: do not leave the child running in its own session
            os.killpg(proc.pid, 9)
            raise
    return time.perf_counter() - start, rc


def tail(path: Path, n: int = 3) -> str:
    lines = [l for l in path.read_text(errors="replace").replace("\r", "\n").splitlines() if l.strip()]
    return "\n".join(lines[-n:])


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, spec=".2f"):
    return "-" if x is None else ("timeout" if x == "timeout" else format(x, spec))


def ratio(peer, ours):
    if peer == "timeout":
        return "timeout"
    if peer is None or ours is None or ours == 0:
        return "-"
    return f"{peer / ours:.1f}x"


# ---------------------------------------------------------------------------------------------- traces

def collect(work: Path, iters: int, k: int) -> Path:
    out = work / "raw" / f"iters{iters}_run{k}"
    if trace_files(out):
        return out
    if out.exists():
        shutil.rmtree(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    log = out.parent / f"iters{iters}_run{k}.collect.log"
    t, rc = run_timed(["traincheck-collect", "-p", str(SCRIPT), "--output-dir", out.name, "--", "--iters", str(iters)],
                      log, cwd=out.parent)
    if rc != 0 or not trace_files(out):
        sys.exit(f"collect failed ({rc}), see {log}:\n{tail(log)}")
    print(f"  collected {out.name}: {trace_mb(out):.1f} MB in {t:.0f} s", flush=True)
    return out


def classmethod_apis(folders: list[Path], peer_python: Path | None) -> list[str]:
    """API names in the traces' api_signatures.json whose first parameter is `cls` and that the original
    resolves to a classmethod."""
    names = set()
    for folder in folders:
        sig = folder / "api_signatures.json"
        if sig.exists():
            for name, entry in json.loads(sig.read_text()).items():
                params = entry.get("params") or []
                if params and params[0].get("name") == "cls":
                    names.add(name)
    if not names or peer_python is None:
        return sorted(names)
    r = subprocess.run([str(peer_python), "-c", CLASSMETHOD_PROBE], input=json.dumps(sorted(names)),
                       capture_output=True, text=True)
    return json.loads(r.stdout) if r.returncode == 0 else sorted(names)


def sanitize(raw: Path, san: Path, classmethods: list[str]) -> Path:
    if trace_files(san) and (san / ".sanitized").exists():
        return san
    if san.exists():
        shutil.rmtree(san)
    shutil.copytree(raw, san)
    names = set(classmethods)
    markers = [f'"function":"{n}"' for n in names]
    fixed = 0
    for path in trace_files(san):
        lines = []
        with open(path) as f:
            for line in f:
                if any(m in line for m in markers):
                    rec = json.loads(line)
                    if rec.get("function") in names and isinstance(rec.get("args"), dict) and "0" in rec["args"]:
                        rec["args"] = {str(int(i) - 1): v for i, v in rec["args"].items() if i != "0"}
                        line = json.dumps(rec, separators=(",", ":")) + "\n"
                        fixed += 1
                lines.append(line)
        with open(path, "w") as f:
            f.writelines(lines)
    sig = san / "api_signatures.json"
    if sig.exists():
        sigs = json.loads(sig.read_text())
        for n in names:
            if n in sigs and sigs[n].get("params") and sigs[n]["params"][0].get("name") == "cls":
                sigs[n]["params"] = sigs[n]["params"][1:]
        sig.write_text(json.dumps(sigs, indent=1, sort_keys=True))
    (san / ".sanitized").write_text(f"{fixed} records: dropped cls of {sorted(names)}\n")
    return san


def first_record_of(folder: Path, api: str) -> str | None:
    marker = f'"function":"{api}"'
    for path in trace_files(folder):
        with open(path) as f:
            for lineno, line in enumerate(f, 1):
                if marker in line and '"function_call (pre)"' in line:
                    return f"{path.name}:{lineno}: {line.strip()[:600]}"
    return None


# ---------------------------------------------------------------------------------------------- invariants

def load_invariants(path: Path) -> dict:
    invs = {}
    if not path.exists():
        return invs
    for line in path.read_text().splitlines():
        if line.strip():
            inv = json.loads(line)
            invs[(inv["relation"], json.dumps(inv["params"], sort_keys=True))] = inv
    return invs


def loose_key(inv: dict) -> tuple:
    names = []
    for p in inv["params"]:
        if p.get("param_type") == "APIParam":
            names.append(p["api_full_name"])
        else:
            names.append(f'{p.get("var_type")}.{p.get("attr_name")}:{p.get("pre_value")}->{p.get("post_value")}')
    return (inv["relation"], tuple(names))


def describe(inv: dict) -> str:
    parts = []
    for p in inv["params"]:
        s = p.get("api_full_name") or f'{p.get("var_type")}.{p.get("attr_name")}'
        args = (p.get("arguments") or {}).get("args") if isinstance(p.get("arguments"), dict) else None
        if args:
            shown = ", ".join(f"{k}={json.dumps(v)[:40]}" for k, v in list(args.items())[:4])
            s += f"({shown}{', ...' if len(args) > 4 else ''})"
        parts.append(s)
    return " contains ".join(parts) + f"  [+{inv.get('num_positive_examples')}/-{inv.get('num_negative_examples')}]"


def compare(ours: dict, peer: dict, examples: int) -> None:
    by_rel = collections.defaultdict(lambda: [0, 0, 0])
    for k in ours.keys() | peer.keys():
        by_rel[k[0]][0 if (k in ours and k in peer) else 1 if k in ours else 2] += 1
    print(f"  strict identity (relation, params): {'relation':<24} common  only-ours  only-peer")
    for rel, (c, o, p) in sorted(by_rel.items()):
        print(f"  {'':36}{rel:<24}{c:>7}{o:>11}{p:>11}")
    lo, lp = collections.defaultdict(list), collections.defaultdict(list)
    for inv in ours.values():
        lo[loose_key(inv)].append(inv)
    for inv in peer.values():
        lp[loose_key(inv)].append(inv)
    common = lo.keys() & lp.keys()
    print(f"  loose identity (API pair, no argument constraints): common {len(common)}, only-ours "
          f"{len(lo.keys() - lp.keys())}, only-peer {len(lp.keys() - lo.keys())}")
    strict_common = ours.keys() & peer.keys()
    classes = collections.OrderedDict()
    classes["same pair, argument constraints differ"] = [
        (lo[k], lp[k]) for k in sorted(common)
        if not any((i["relation"], json.dumps(i["params"], sort_keys=True)) in strict_common for i in lo[k])]
    classes["pair learned only by ours"] = [(lo[k], []) for k in sorted(lo.keys() - lp.keys())]
    classes["pair learned only by the original"] = [([], lp[k]) for k in sorted(lp.keys() - lo.keys())]
    classes["pair with several invariants in the original (one per distinct argument set)"] = [
        (lo.get(k, []), lp[k]) for k in sorted(lp) if len(lp[k]) > 1]
    for name, items in classes.items():
        print(f"  - {name}: {len(items)}")
        for o, p in items[:examples]:
            for inv in o:
                print(f"      ours: {describe(inv)}")
            for inv in p[:2]:
                print(f"      peer: {describe(inv)}")
    # Which argument names make the difference, by the recorded type of their value.
    keys = collections.Counter()
    for o, p in classes["same pair, argument constraints differ"]:
        oa = ((o[0]["params"][-1].get("arguments") or {}).get("args") or {}) if o else {}
        pa = ((p[0]["params"][-1].get("arguments") or {}).get("args") or {}) if p else {}
        for k in oa.keys() - pa.keys():
            keys[("ours only", k if k == "self" or k.isdigit() else "*", next(iter(oa[k]), "?") if isinstance(oa[k], dict) else "?")] += 1
        for k in pa.keys() - oa.keys():
            keys[("peer only", k if k == "self" or k.isdigit() else "*", next(iter(pa[k]), "?") if isinstance(pa[k], dict) else "?")] += 1
        for k in oa.keys() & pa.keys():
            if oa[k] != pa[k]:
                keys[("values differ", "*", next(iter(pa[k]), "?") if isinstance(pa[k], dict) else "?")] += 1
    print("    argument constraints present on one side only (side, name, recorded type): "
          + ", ".join(f"{s} {n} {t}: {c}" for (s, n, t), c in keys.most_common(12)))
    same = [(ours[k], peer[k]) for k in strict_common]
    agree = sum(1 for a, b in same if a["num_positive_examples"] == b["num_positive_examples"])
    pre_agree = sum(1 for a, b in same if json.dumps(a["precondition"], sort_keys=True) == json.dumps(b["precondition"], sort_keys=True))
    print(f"  among the {len(same)} common: same preconditions {pre_agree}, same num_positive_examples {agree} "
          f"(the original adds one positive example per contained child call, and samples parent calls "
          f"once 10 in a row contain the same number of events; ours: one example per parent call, no sampling)")


def violations(results: Path) -> list[str]:
    names = []
    for summary in glob.glob(str(results / "*" / "violations_summary.json")):
        for v in json.loads(Path(summary).read_text()).get("violations", []):
            names.append(v.get("display_name") or v.get("text_description") or "?")
    return names


# ---------------------------------------------------------------------------------------------- main

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10,100", help="iterations of mlp_adam.py, comma separated (also: 1000)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--work", type=Path, default=None, help="work dir (kept and reused; default: a new temp dir)")
    ap.add_argument("--peer-venv", type=Path, default=Path("/tmp/peer"))
    ap.add_argument("--no-peer", action="store_true")
    ap.add_argument("--peer-timeout", type=float, default=1800)
    ap.add_argument("--peer-repeat-below", type=float, default=120,
                    help="time the original in later rounds only if its first run took less (s)")
    ap.add_argument("--no-sanitize", action="store_true")
    ap.add_argument("--cross-all", action="store_true", help="cross checks at every size, not only the smallest")
    ap.add_argument("--examples", type=int, default=3)
    ap.add_argument("--relations", default=DEFAULT_RELATIONS,
                    help="relations both tools infer, comma separated (default: %(default)s)")
    args = ap.parse_args()

    sizes = [int(s) for s in args.sizes.split(",") if s]
    relations = [r for r in args.relations.split(",") if r]
    work = args.work or Path(tempfile.mkdtemp(prefix="tc_analyzer_vs_peer_"))
    work.mkdir(parents=True, exist_ok=True)
    peer_bin = args.peer_venv / "bin"
    use_peer = not args.no_peer and (peer_bin / "traincheck-infer").exists()
    peer_env = {**os.environ, "PATH": f"{peer_bin}:{os.environ['PATH']}"}
    print(f"work dir: {work}   original: {peer_bin if use_peer else 'not used'}", flush=True)

    # 1. traces
    raw = {}
    for n in sizes:
        raw[n] = [collect(work, n, k) for k in (1, 2, 3)]

    # 2. compatibility probe and sanitised copies
    folders = raw
    if use_peer:
        n0 = min(sizes)
        out = work / "out" / f"iters{n0}"
        out.mkdir(parents=True, exist_ok=True)
        log = out / "peer_infer_raw.log"
        t, rc = run_timed(["traincheck-infer", "-f", str(raw[n0][0]), str(raw[n0][1]), "-o", str(out / "peer_raw_inv.json"),
                           "--enable-relation", *relations], log, env=peer_env, timeout=args.peer_timeout, cwd=out)
        print(f"\ncompatibility: the original's traincheck-infer on OUR raw traces ({n0} iterations): "
              f"{'ok' if rc == 0 else 'FAILED (exit %s)' % rc}", flush=True)
        if rc != 0:
            print("  " + tail(log, 1))
    if use_peer and not args.no_sanitize:
        cms = classmethod_apis([f for fs in raw.values() for f in fs], peer_bin / "python")
        print(f"  classmethods in our traces (recorded with cls as argument \"0\"; the original never wraps them): {cms}")
        for api in cms[:1]:
            rec = first_record_of(raw[min(sizes)][0], api)
            if rec:
                print(f"  e.g. {rec}")
        folders = {n: [sanitize(f, work / "san" / f.name, cms) for f in fs] for n, fs in raw.items()}
        print("  timing both tools on sanitised copies (cls dropped from those records and signatures)")

    # 3. timing
    results = {}
    for n in sizes:
        a, b, c = folders[n]
        out = work / "out" / f"iters{n}"
        out.mkdir(parents=True, exist_ok=True)
        empty = out / "empty_inv.json"
        empty.write_text("")
        t = collections.defaultdict(list)
        peer_status = {}
        print(f"\n== {n} iterations: infer input {trace_mb(a) + trace_mb(b):.1f} MB, checked trace {trace_mb(c):.1f} MB", flush=True)
        for r in range(args.rounds):
            order = ["ours", "peer"] if r % 2 == 0 else ["peer", "ours"]
            for stage in ("infer", "check"):
                for who in order:
                    if who == "peer":
                        if not use_peer or peer_status.get(stage) in ("timeout", "failed"):
                            continue
                        if r > 0 and (not t[f"peer_{stage}"] or t[f"peer_{stage}"][0] >= args.peer_repeat_below):
                            continue
                    inv = out / f"{who}_inv.json"
                    if stage == "infer":
                        cmd = ["traincheck-infer", "-f", str(a), str(b), "-o", str(inv), "--enable-relation", *relations]
                    else:
                        res = out / f"{who}_check"
                        shutil.rmtree(res, ignore_errors=True)
                        cmd = ["traincheck-check", "-f", str(c), "-i", str(inv), "-o", str(res)]
                    log = out / f"{who}_{stage}.log"
                    sec, rc = run_timed(cmd, log, env=peer_env if who == "peer" else None,
                                        timeout=args.peer_timeout if who == "peer" else None, cwd=out)
                    if who == "peer" and sec is None:
                        peer_status[stage] = "timeout"
                        print(f"  round {r + 1}: peer {stage} timeout (> {args.peer_timeout:.0f} s)", flush=True)
                        continue
                    if rc != 0:
                        if who == "ours":
                            sys.exit(f"our {stage} failed ({rc}), see {log}:\n{tail(log)}")
                        peer_status[stage] = "failed"
                        print(f"  round {r + 1}: peer {stage} FAILED ({rc}): {tail(log, 1)}", flush=True)
                        continue
                    t[f"{who}_{stage}"].append(sec)
                    print(f"  round {r + 1}: {who:4} {stage:5} {sec:8.2f} s", flush=True)
            res = out / "ours_read"
            shutil.rmtree(res, ignore_errors=True)
            sec, rc = run_timed(["traincheck-check", "-f", str(c), "-i", str(empty), "-o", str(res), "--no-html-report"],
                                out / "ours_read.log", cwd=out)
            t["ours_read"].append(sec)
        results[n] = {
            "mb_one": trace_mb(a), "mb_infer": trace_mb(a) + trace_mb(b), "mb_check": trace_mb(c),
            **{k: median(v) for k, v in t.items()}, **{f"n_{k}": len(v) for k, v in t.items()},
            **{f"peer_{s}": "timeout" for s, v in peer_status.items() if v == "timeout"},
        }

    # table
    print("\n== timings (median wall seconds over rounds; n = runs; ratio = original / ours)")
    hdr = (f"{'iters':>6} {'trace MB':>9} {'ours infer':>11} {'peer infer':>11} {'ratio':>8} "
           f"{'ours check':>11} {'peer check':>11} {'ratio':>8} {'read MB/s':>10}")
    print(hdr)
    for n in sizes:
        r = results[n]
        read_mbs = r["mb_check"] / r["ours_read"] if r.get("ours_read") else None
        print(f"{n:>6} {r['mb_one']:>9.1f} {fmt(r.get('ours_infer')):>11} {fmt(r.get('peer_infer')):>11} "
              f"{ratio(r.get('peer_infer'), r.get('ours_infer')):>8} {fmt(r.get('ours_check')):>11} "
              f"{fmt(r.get('peer_check')):>11} {ratio(r.get('peer_check'), r.get('ours_check')):>8} {fmt(read_mbs, '.0f'):>10}")
    print("  trace MB: one run's trace_*.log files (infer reads two runs, check one).  n:",
          {n: {k[2:]: v for k, v in results[n].items() if k.startswith("n_")} for n in sizes})
    print("  read MB/s: checked trace bytes / wall time of our traincheck-check with an EMPTY invariant file"
          " (dedicated read measurement: process start, read, index, empty results).")
    for k in range(1, len(sizes)):
        n0, n1 = sizes[k - 1], sizes[k]
        r0, r1 = results[n0], results[n1]
        growth = []
        for key in ("ours_infer", "ours_check", "ours_read", "peer_infer", "peer_check"):
            x0, x1 = r0.get(key), r1.get(key)
            if isinstance(x0, float) and isinstance(x1, float) and x0 > 0:
                e = math.log(x1 / x0) / math.log(r1["mb_one"] / r0["mb_one"]) if r1["mb_one"] != r0["mb_one"] else float("nan")
                growth.append(f"{key} x{x1 / x0:.2f} (exponent {e:.2f})")
        print(f"  growth {n0}->{n1} iterations: trace x{r1['mb_one'] / r0['mb_one']:.2f}; " + ", ".join(growth))

    # 4-5. invariant sets and cross checks
    if use_peer:
        for n in sizes:
            out = work / "out" / f"iters{n}"
            ours, peer = load_invariants(out / "ours_inv.json"), load_invariants(out / "peer_inv.json")
            print(f"\n== invariant sets, {n} iterations: ours {len(ours)}, original {len(peer)}")
            if peer:
                compare(ours, peer, args.examples)
            ov, pv = violations(out / "ours_check"), violations(out / "peer_check")
            print(f"  check of the good run3: ours {len(ov)} violated, original {len(pv)} violated")
            if n != min(sizes) and not args.cross_all:
                continue
            c = folders[n][2]
            if peer:
                res = out / "cross_ours_checks_peer_inv"
                shutil.rmtree(res, ignore_errors=True)
                _, rc = run_timed(["traincheck-check", "-f", str(c), "-i", str(out / "peer_inv.json"), "-o", str(res),
                                   "--no-html-report"], out / "cross_ours.log", cwd=out)
                v = violations(res) if rc == 0 else [f"exit {rc}: {tail(out / 'cross_ours.log', 1)}"]
                print(f"  cross: OUR check with the ORIGINAL's invariants on run3: {len(v)} violated; e.g. {v[:4]}")
            if ours:
                res = out / "cross_peer_checks_ours_inv"
                shutil.rmtree(res, ignore_errors=True)
                _, rc = run_timed(["traincheck-check", "-f", str(c), "-i", str(out / "ours_inv.json"), "-o", str(res)],
                                  out / "cross_peer.log", env=peer_env, timeout=args.peer_timeout, cwd=out)
                v = violations(res) if rc == 0 else [f"exit {rc}: {tail(out / 'cross_peer.log', 1)}"]
                print(f"  cross: the ORIGINAL's check with OUR invariants on run3: {len(v)} violated; e.g. {v[:4]}")
    print(f"\nlogs and outputs: {work / 'out'}")


if __name__ == "__main__":
    main()
