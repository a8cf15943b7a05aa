"""Long names cost inference their length once, not once per pair (invariant
params and descriptions never copy a name once per pair: cpp/trace/name.h).

Names are cut at 4096 bytes when read, but inference makes a hypothesis per pair of functions, and each
held the names in its params, its description and its merge key: 40 functions of 4000-byte names (a
2.8 MB trace of two runs) took infer to about 230 MB, growing as name length x pairs. Params now hold
interned names and descriptions quote them by reference (cpp/invariant/shared_text.h)."""
import json
import subprocess
import sys

FUNCTIONS = 40
NAME_BYTES = 4000


def write_run(folder, names, steps=4):
    folder.mkdir()
    with open(folder / "trace_API_1_1.log", "w") as f:
        t = 0
        for step in range(steps):
            for i, name in enumerate(names):
                for kind in ("pre", "post"):
                    t += 1
                    f.write(json.dumps({"func_call_id": f"{step}_{i}", "thread_id": 1, "process_id": 1,
                                        "meta_vars": {"step": step, "stage": "training"},
                                        "type": f"function_call ({kind})", "function": name, "is_bound_method": False,
                                        "obj_id": None, "args": {}, "kwargs": {}, "time": t}) + "\n")


# Runs argv[1:] and prints its exit code and peak RSS (KB). The measuring process is this small helper, not
# pytest: a process spawned (vfork) from a large parent has the parent's peak as its ru_maxrss, since Linux
# folds the old memory's high-water mark in at exec (an xdist worker of 840 MB made infer read 840 MB).
MEASURE = ("import resource, subprocess, sys; rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode; "
           "print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")


def peak_rss_bytes(cmd, cwd):
    """Exit code and peak RSS of `cmd` alone, measured from a small helper process (MEASURE)."""
    proc = subprocess.run([sys.executable, "-c", MEASURE, *cmd], cwd=cwd, capture_output=True, text=True)
    rc, kb = (int(x) for x in proc.stdout.split())
    return rc, kb * 1024, proc.stderr


def test_infer_memory_does_not_grow_with_name_length_times_pairs(tmp_path):
    names = [f"torch.f{i}_" + "x" * NAME_BYTES for i in range(FUNCTIONS)]
    for run in ("a", "b"):
        write_run(tmp_path / run, names)
    trace_bytes = sum(p.stat().st_size for p in tmp_path.glob("*/trace_API_*.log"))

    rc, rss, stderr = peak_rss_bytes(["traincheck-infer", "-f", "a", "b", "-o", "inv.json"], tmp_path)

    assert rc == 0, stderr
    invariants = [json.loads(line) for line in (tmp_path / "inv.json").read_text().splitlines()]
    # Every ordered pair is a Cover and a Lead hypothesis: each invariant names two 4 KB functions.
    pairs = [inv for inv in invariants if inv["relation"] in ("FunctionCoverRelation", "FunctionLeadRelation")]
    assert len(pairs) == 2 * FUNCTIONS * (FUNCTIONS - 1)
    assert all(len(inv["params"][0]["api_full_name"]) > NAME_BYTES for inv in pairs)
    assert all(inv["params"][0]["api_full_name"] in inv["text_description"] for inv in pairs[:10])
    # 3120 pairs x 8 KB of names is 25 MB per copy; the trace is 2.8 MB. The bound leaves room for the
    # process itself and its indexes, far below one copy of the names per pair.
    assert rss < 32 * 2**20 + 8 * trace_bytes, f"peak RSS {rss / 2**20:.0f} MB for a {trace_bytes / 2**20:.1f} MB trace"
