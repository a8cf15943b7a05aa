"""Cross-rank checking at scale on one machine (docs/analysis.md §Cross-rank checking in-process, "Cost at
scale"): the real exchange in many lightweight processes, a real c10d TCPStore server, no training.

    python bench/cross_rank_scale.py [--ranks 8 32 128 256] [--local 8] [--vars 16] [--steps 24]

Each rank is a process forked from one that imported torch and traincheck (pages shared, so a rank costs
a few MB): it opens a client of the TCPStore server (its own process), starts the in-process online
session (traincheck._online: the same session, checker and exchange as under collect) with the invariant
inference learns from data-parallel runs, enables the cross-rank exchange with its rank, LOCAL_RANK,
LOCAL_WORLD_SIZE (ranks grouped into simulated nodes of --local) and feeds the session, through the
record sink collect's writer thread uses, V synthetic parameter states per step, on a shared clock
(--step-ms per step), with a writer pass every 20 ms. At step --diverge one parameter of one rank (local
rank 1 of the middle node) differs.

Two states per N, measured side by side:
  - baseline: the ring (TRAINCHECK_CROSS_RANK_PEERS=1), until now the setting for large jobs;
  - candidate: the default (no setting: cross_rank_topology.h chooses).
Per state and N, over the steps after warm-up and before the divergence (replicas agree):
  - calls and bytes the job's store served per step (every rank's CountingPeerStore counts, summed);
  - exchange-thread CPU per rank and step (median over ranks; its thread's CPU clock);
  - the divergence's latency: from the end of the divergent step (the start of the next one on the shared
    clock) to the first alert on any rank, in ms and in steps;
  - memory: each rank's private memory (median, max; smaps_rollup) and the store server's resident size.
Then the cost model fitted to the candidate's points, and its figures at N = 1024, 4096, 16384.
--diverge-node: every rank of the middle node diverges, so the leaders' folds find it, not its node.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
INVARIANT = REPO / "tests/cpp/data/relation_cases/consistency/ranks_learned/expected_invariants.jsonl"
PREFIX = "traincheck/cross_rank/"
PASS_MS = 20  # the recorder's writer period

SERVER = """
import sys, torch.distributed as dist
s = dist.TCPStore("127.0.0.1", 0, 1, True, wait_for_workers=False)
print(s.port, flush=True)
sys.stdin.read()
"""


class Sink(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("context", ctypes.c_void_p),
                ("on_lines", ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64,
                                              ctypes.c_uint64, ctypes.c_char_p, ctypes.c_size_t)),
                ("on_pass_end", ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_void_p)),
                ("on_close", ctypes.c_void_p), ("on_fork_child", ctypes.c_void_p)]


def sink_of(capsule) -> Sink:
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    return Sink.from_address(get(capsule, b"traincheck.record_sink"))


def states(rank: int, step: int, variables: int, offset: int = 0) -> bytes:
    out = []
    now = time.time_ns()  # the writer's lag is judged by record times: a real clock's
    for v in range(variables):
        value = 31 * step + 1000 * v + (offset if v == 1 else 0)
        out.append('{"type":"state_change","var_type":"torch.nn.Parameter","var_name":"layer%d.weight",'
                   '"process_id":%d,"thread_id":1,"time":%d,"meta_vars":{"step":%d,"stage":"training",'
                   '"_DATA_PARALLEL_RANK":%d},"attributes":{"data":%d,"nbytes":%d}}\n'
                   % (v, os.getpid(), now, step, rank, value, 8 * (v + 1)))
    return "".join(out).encode()


def private_mb() -> float:
    kb = 0
    for line in open("/proc/self/smaps_rollup"):
        if line.startswith(("Private_Clean:", "Private_Dirty:")):
            kb += int(line.split()[1])
    return kb / 1024


def rank_main(rank: int, a, port: int, work: Path, peers: int, out_fd: int) -> None:
    """One rank: its session fed on the shared clock; its figures written to out_fd as one JSON line."""
    import torch.distributed as dist
    from traincheck import _online

    err = os.open(work / f"stderr_{rank}.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(err, 2)
    store = dist.TCPStore("127.0.0.1", port, a.world, False, wait_for_workers=False)
    prefixed = dist.PrefixStore(PREFIX, store)
    sink = sink_of(_online.start([str(INVARIANT)], "", str(work / f"online_{rank}"), 0.0, "log"))
    local_rank, node = rank % a.local, rank // a.local
    _online.enable_cross_rank(lambda: (prefixed, rank, a.world), peers, 8, local_rank, a.local, node)
    middle = a.world // a.local // 2
    divergent = rank // a.local == middle and (a.diverge_node or rank % a.local == 1)
    # Every rank started before the clock does (forking and starting hundreds takes seconds here).
    store.add("bench/ready", 1)
    store.wait(["bench/go"])
    t0 = float(store.get("bench/go"))
    cpu0 = time.process_time()
    snaps, alert = {}, None
    pid = os.getpid()
    for step in range(a.steps):
        if rank == getattr(a, "kill_rank", -1) and step == a.kill_step:
            os.kill(os.getpid(), signal.SIGKILL)  # as a rank the job loses: nothing flushed, nothing left
        lines = states(rank, step, a.vars, 7 if divergent and step == a.diverge else 0)
        sink.on_lines(sink.context, 1, pid, 1, lines, len(lines))
        end = t0 + (step + 1) * a.step_ms / 1000
        while True:
            sink.on_pass_end(sink.context)
            if alert is None and _online.take_alerts():
                alert = (time.monotonic(), step)
            now = time.monotonic()
            if now >= end:
                break
            time.sleep(min(PASS_MS / 1000, end - now))
        if step in (a.warmup, a.diverge - 1):
            snaps[step] = _online.cross_rank_stats()
    cpu = time.process_time() - cpu0
    _online.finish()
    if alert is None and _online.take_alerts():
        alert = (time.monotonic(), a.steps)
    result = {"rank": rank, "snaps": snaps, "end": _online.cross_rank_stats(), "alert": alert, "private_mb": private_mb(),
              "t0": t0, "cpu_s": cpu}
    os.write(out_fd, (json.dumps(result) + "\n").encode())
    os._exit(0)


def rss_mb(pid: int) -> float:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def run(a, peers: int, label: str) -> dict:
    server = subprocess.Popen([sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    port = int(server.stdout.readline())
    work = Path(tempfile.mkdtemp(prefix=f"tc_scale_{label}_{a.world}_"))
    read_fd, write_fd = os.pipe()
    children = []
    for rank in range(a.world):
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            try:
                rank_main(rank, a, port, work, peers, write_fd)
            finally:
                os._exit(1)
        children.append(pid)
    os.close(write_fd)
    import torch.distributed as dist
    clock = dist.TCPStore("127.0.0.1", port, 1, False, wait_for_workers=False)
    while clock.add("bench/ready", 0) < a.world:
        time.sleep(0.05)
    clock.set("bench/go", str(time.monotonic() + 1.0))
    with os.fdopen(read_fd) as f:
        results = [json.loads(line) for line in f]
    for pid in children:
        os.waitpid(pid, 0)
    # A node's channel its ranks could not all leave (one was killed): removed here, as its launcher would.
    ours = dist.PrefixStore(PREFIX, clock)
    for node in range(a.world // a.local):
        if ours.check([f"node/n{node}"]):
            shutil.rmtree(ours.get(f"node/n{node}").decode(), ignore_errors=True)
    server_mb = rss_mb(server.pid)
    server.stdin.close()
    server.wait()
    said = [line for r in range(a.world) for line in (work / f"stderr_{r}.txt").read_text().splitlines()]
    plan = next((line for line in said if "cross-rank check:" in line), "")
    others = [line for line in said if line != plan]
    row = summarise(a, results, results[0]["t0"], server_mb, plan, len(others), label)
    # How busy the machine was while the ranks stepped: their CPU over the steps' wall time, in cores.
    row["load_cores"] = sum(r["cpu_s"] for r in results) / (a.steps * a.step_ms / 1000)
    row["first_other"] = others[0] if others else ""
    row["others"] = others
    row["finished"] = len(results)
    shutil.rmtree(work, ignore_errors=True)  # every rank's output folder and stderr: read, no longer needed
    return row


def summarise(a, results: list, t0: float, server_mb: float, plan: str, other_lines: int, label: str) -> dict:
    steps = a.diverge - 1 - a.warmup

    def delta(r, key):
        return r["snaps"][str(a.diverge - 1)][key] - r["snaps"][str(a.warmup)][key]

    calls = sum(delta(r, "job_store_calls") for r in results) / steps
    nbytes = sum(delta(r, "job_store_bytes") for r in results) / steps
    cpu_us = statistics.median(delta(r, "io_cpu_ns") for r in results) / steps / 1000
    summary = statistics.median(r["end"]["bytes_published"] / max(1, r["end"]["steps_published"]) for r in results)
    alerts = [r["alert"] for r in results if r["alert"]]
    latency_ms = latency_steps = None
    if alerts:
        when, step = min(alerts)
        latency_steps = step - a.diverge  # the step the reporting rank was in, less the divergent one
        latency_ms = (when - (t0 + (a.diverge + 1) * a.step_ms / 1000)) * 1000  # from the divergent step's end
    private = [r["private_mb"] for r in results]
    return {"label": label, "N": a.world, "mode": results[0]["end"]["mode"], "calls": calls, "bytes": nbytes,
            "cpu_us": cpu_us, "latency_ms": latency_ms, "latency_steps": latency_steps, "reporting": len(alerts),
            "private_mb": statistics.median(private), "private_max_mb": max(private), "server_mb": server_mb,
            "summary_bytes": summary, "plan": plan, "other_lines": other_lines}


def fit(points: list, key: str, nodes_of) -> tuple:
    """Least squares of points[key] = slope * nodes + intercept."""
    xs = [nodes_of(p["N"]) for p in points]
    ys = [p[key] for p in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    return slope, my - slope * mx


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ranks", type=int, nargs="+", default=[8, 32, 128, 256])
    p.add_argument("--local", type=int, default=8, help="ranks per simulated node (LOCAL_WORLD_SIZE)")
    p.add_argument("--vars", type=int, default=16, help="parameters per rank (V)")
    p.add_argument("--steps", type=int, default=24)
    p.add_argument("--warmup", type=int, default=6)
    p.add_argument("--diverge", type=int, default=18)
    p.add_argument("--step-ms", type=int, default=1000)
    p.add_argument("--diverge-node", action="store_true",
                   help="every rank of the middle node diverges (found by the leaders' folds), not local rank 1 alone")
    p.add_argument("--kill-rank", type=int, default=-1, help="this rank is killed (SIGKILL) at --kill-step")
    p.add_argument("--kill-step", type=int, default=-1)
    p.add_argument("--states", nargs="+", default=["baseline", "candidate"], choices=["baseline", "candidate"])
    p.add_argument("--model-vars", type=int, default=200, help="V of the modelled figures")
    p.add_argument("--json", help="write the points here too")
    a = p.parse_args()
    import torch.distributed  # noqa: F401  (imported once, shared by every forked rank)
    from traincheck import _online  # noqa: F401

    rows = []
    for n in a.ranks:
        a.world = n
        for label, peers in (("baseline: ring", 1), ("candidate: default", 0)):
            if label.split(":")[0] not in a.states:
                continue
            row = run(a, peers, label.split(":")[0])
            row["label"] = label
            rows.append(row)
            print(f"N={n:5d} {label:20s} {row['mode']:9s} calls/step {row['calls']:8.1f}  bytes/step {row['bytes']:10.0f}  "
                  f"exchange CPU/rank/step {row['cpu_us']:7.1f} us  latency {row['latency_ms'] and round(row['latency_ms'])} ms "
                  f"({row['latency_steps']} steps, {row['reporting']} ranks)  private {row['private_mb']:.1f} MB/rank "
                  f"(max {row['private_max_mb']:.1f})  store server {row['server_mb']:.0f} MB  ranks' load {row['load_cores']:.2f} cores  "
                  f"other stderr lines {row['other_lines']}",
                  flush=True)
            if row["first_other"]:
                print("  first other stderr line:", row["first_other"], flush=True)
        if len(a.states) < 2:
            continue
        base, cand = rows[-2], rows[-1]
        print(f"N={n:5d} candidate/baseline: calls {cand['calls'] / base['calls']:.3f}x  bytes {cand['bytes'] / base['bytes']:.3f}x  "
              f"CPU {cand['cpu_us'] / base['cpu_us']:.2f}x   plan: {cand['plan']}", flush=True)
    cands = [r for r in rows if r["label"].startswith("candidate") and r["mode"] == "per node"]
    if len(cands) >= 2:
        nodes = lambda n: n / a.local
        cs, ci = fit(cands, "calls", nodes)
        bs, bi = fit(cands, "bytes", nodes)
        # The reference's summary is the part of the bytes that grows with V: one per step whatever N.
        per_var = statistics.fmean(r["summary_bytes"] for r in cands) / a.vars
        bi_model = bi - per_var * a.vars + per_var * a.model_vars
        print(f"model (per node, {a.local} ranks a node, fitted on N = {[r['N'] for r in cands]}): "
              f"calls/step = {cs:.2f} x nodes + {ci:.1f}; bytes/step = {bs:.1f} x nodes + {bi:.0f} at V = {a.vars} "
              f"(the reference summary, {per_var:.0f} bytes a variable, is {per_var * a.vars:.0f} of it)")
        for n in (1024, 4096, 16384):
            print(f"  N={n:6d}: {cs * nodes(n) + ci:8.0f} calls/step, {(bs * nodes(n) + bi_model) / 1e6:8.3f} MB/step at V = {a.model_vars}; "
                  f"ring: {4 * n} calls, {2 * n * a.model_vars * per_var / 1e6:.1f} MB")
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
