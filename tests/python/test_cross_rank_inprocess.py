"""In-process cross-rank checking (docs/analysis.md §Cross-rank checking in-process): each rank of a
2-rank job publishes its step summaries to the job's c10d store, and its in-process checker compares
them with its peer's. A good run reports nothing; a perturbed rank is reported during the run, on both
ranks; a lagging rank is neither a false alarm nor a hang; a killed rank leaves the other one training,
with a message."""
import json
import re
import shutil
import socket
import subprocess
import sys

import pytest

from conftest import collect, read_trace_files, write_script

pytestmark = pytest.mark.skipif(shutil.which("torchrun") is None, reason="torchrun not installed")

# Replicas that must agree: DDP (DDP=1), or plain replicas trained the same way on every rank without
# collectives (DDP=0: a rank can then die without taking the other one down). Each step sleeps, as real
# steps take time: the cross-rank report arrives within a writer period and a store poll (~60 ms).
SCRIPT = """
import os, signal, time
import torch, torch.distributed as dist, torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
env = lambda name: int(os.environ.get(name, "-1"))
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
if os.environ.get("DDP", "1") == "1":
    model = DDP(model)
inner = getattr(model, "module", model)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
torch.manual_seed(1)  # the same data on every rank: replicas without DDP stay equal too
for step, x in enumerate(torch.randn(int(os.environ.get("STEPS", "10")), 4, 8), 1):
    optimizer.zero_grad()
    model(x).sum().backward()
    if step == env("PERTURB_STEP") and rank == 1:  # a silent divergence, as a rank-local bug would cause
        with torch.no_grad():
            inner[0].weight[3, 3] += 1e-3
    if step == env("KILL_STEP") and rank == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    optimizer.step()
    time.sleep(0.6 if step == env("SLEEP_STEP") and rank == 1 else 0.15)
if os.environ.get("DDP", "1") == "1":
    dist.destroy_process_group()
"""

TORCHRUN = "torchrun --standalone --nproc_per_node=2 ddp.py\n"
# Two ranks started by hand (env:// rendezvous), so that one can die without the launcher stopping the
# other one, as torchrun's agent does; the script's exit code is rank 0's.
BY_HAND = """export MASTER_ADDR=127.0.0.1 MASTER_PORT={port} WORLD_SIZE=2
RANK=1 {python} ddp.py &
RANK=0 {python} ddp.py
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(tmp_path, out, launcher, *args, **env):
    write_script(tmp_path, "ddp.py", SCRIPT)
    (tmp_path / "run.sh").write_text(launcher)
    result = collect(tmp_path, "-p", "ddp.py", "-s", "run.sh", "--output-dir", out, "--models-to-track", "model",
                     "--model-tracker-style", "sampler", *args, env={k: str(v) for k, v in env.items()}, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


@pytest.fixture(scope="module")
def invariants(tmp_path_factory):
    """Inferred from a good DDP run: among them, replicas hold the same Parameter.data at each step."""
    tmp = tmp_path_factory.mktemp("good")
    run(tmp, "good", TORCHRUN, STEPS=6)
    result = subprocess.run(["traincheck-infer", "-f", "good", "-o", "inv.json"], cwd=tmp, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in (tmp / "inv.json").read_text().splitlines()]
    cross = [inv for inv in lines if inv["relation"] == "ConsistencyRelation"
             and [p.get("attr_name") for p in inv["params"]] == ["data", "data"]]
    assert cross, "no cross-rank Consistency invariant learned"
    path = tmp / "cross_rank.json"
    path.write_text("".join(json.dumps(inv) + "\n" for inv in cross))
    return path


def summaries(out):
    return {int(p.stem.split("_")[1]): json.loads(p.read_text()) for p in out.glob("online_check/summary_*.json")}


def failed(out):
    text = (out / "online_check" / "failed.log")
    return [json.loads(line) for line in text.read_text().splitlines()] if text.exists() else []


def first_record_time(out, step):
    return min(r["time"] for recs in read_trace_files(out, "VAR").values() for r in recs if r["meta_vars"]["step"] == step)


def test_a_good_ddp_run_reports_nothing_and_each_rank_compares_its_peer(tmp_path, invariants):
    run(tmp_path, "out", TORCHRUN, "-i", str(invariants), STEPS=8)
    assert failed(tmp_path / "out") == []
    by_pid = summaries(tmp_path / "out")
    ranks = sorted(s["cross_rank"]["rank"] for s in by_pid.values() if "cross_rank" in s)
    assert ranks == [0, 1]
    for s in by_pid.values():
        cr = s["cross_rank"]
        assert cr["world_size"] == 2 and cr["store_errors"] == 0 and cr["lagging"] == []
        assert cr["summaries_received"] >= 7  # every ended step of the peer
        # Replicas in sync: the learned invariant pairs replicas of one name, so the peer's steps with this
        # rank's digest are judged without being fetched (step_digest.h), and all of them match.
        assert cr["summaries_matched"] == cr["summaries_received"] and cr["records_received"] == 0
        assert s["violations"] == 0 and s["triggered"] >= 1  # pairs were compared


def test_a_perturbed_rank_is_reported_in_process_within_one_step_on_both_ranks(tmp_path, invariants):
    run(tmp_path, "out", TORCHRUN, "-i", str(invariants), STEPS=10, PERTURB_STEP=4)
    out = tmp_path / "out"
    entries = [e for e in failed(out) if e["invariant"]["relation"] == "ConsistencyRelation"]
    assert entries
    for e in entries:
        steps = {r["meta_vars.step"] for r in e["trace"]}
        ranks = {r["meta_vars._DATA_PARALLEL_RANK"] for r in e["trace"]}
        assert ranks == {0, 1} and len(steps) == 1 and steps.pop() >= 4
    first = min(entries, key=lambda e: e["detection_time"])
    assert {r["meta_vars.step"] for r in first["trace"]} == {4}
    # Found while training ran, before step 6 began: within one step of the divergence's step ending.
    assert first["detection_time"] < first_record_time(out, 6)
    # Reported on both ranks: each rank's summary counts violations.
    by_pid = summaries(out)
    assert len(by_pid) == 2 and all(s["violations"] > 0 for s in by_pid.values())


def test_a_lagging_rank_neither_hangs_nor_raises_a_false_alarm(tmp_path, invariants):
    run(tmp_path, "out", TORCHRUN, "-i", str(invariants), STEPS=8, SLEEP_STEP=3)
    assert failed(tmp_path / "out") == []
    assert all(s["cross_rank"]["lagging"] == [] for s in summaries(tmp_path / "out").values())


def test_a_killed_rank_leaves_the_other_training_with_a_clear_message(tmp_path, invariants):
    port = free_port()
    result = run(tmp_path, "out", BY_HAND.format(port=port, python=sys.executable), "-i", str(invariants), DDP=0, STEPS=24, KILL_STEP=3)
    assert "rank 1 has not published step" in result.stderr
    by_pid = summaries(tmp_path / "out")
    rank0 = [s for s in by_pid.values() if s.get("cross_rank", {}).get("rank") == 0]
    assert len(rank0) == 1 and rank0[0]["cross_rank"]["lagging"] == [1]
    # Rank 0 trained to its end: its last step's records are in the trace.
    steps = {r["meta_vars"]["step"] for recs in read_trace_files(tmp_path / "out", "VAR").values() for r in recs}
    assert max(steps) >= 24
    assert failed(tmp_path / "out") == []


# HSDP on gloo/CPU (FSDP2's fully_shard on a 2-D mesh): 2 replicas of a model sharded over 2 ranks, so
# ranks 0 and 2 hold shard 0 and ranks 1 and 3 shard 1. fully_shard replaces the parameters in place
# after the model is tracked: the tracker follows them, digests each rank's shard and names it after the
# shard (model.0.weight@shard(0)), so the invariant learns to pair replicas of the same shard only.
HSDP_SCRIPT = """
import os
import torch, torch.distributed as dist, torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

dist.init_process_group("gloo")
rank = dist.get_rank()
mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("replicate", "shard"))
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
for layer in (model[0], model[2]):
    fully_shard(layer, mesh=mesh)
fully_shard(model, mesh=mesh)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
torch.manual_seed(1 + rank)
perturb = int(os.environ.get("PERTURB_STEP", "-1"))
for step in range(1, 7):
    x, y = torch.randn(4, 8), torch.randn(4, 4)
    optimizer.zero_grad()
    nn.functional.mse_loss(model(x), y).backward()
    if step == perturb and rank == 2:  # one replica of shard 0 drifts
        with torch.no_grad():
            model[0].weight.to_local()[0, 0] += 1e-3
    optimizer.step()
dist.destroy_process_group()
"""


PYTHON_WARNING = re.compile(r"^\S+:\d+: \w*Warning: .*$", re.MULTILINE)


def test_with_hsdp_only_the_ranks_holding_the_same_shard_are_compared(tmp_path):
    write_script(tmp_path, "hsdp.py", HSDP_SCRIPT)
    (tmp_path / "run.sh").write_text("torchrun --standalone --nproc_per_node=4 hsdp.py\n")

    def hsdp(out, *args, **env):
        result = collect(tmp_path, "-p", "hsdp.py", "-s", "run.sh", "--output-dir", out, "--models-to-track", "model",
                         "--model-tracker-style", "sampler", *args, env={k: str(v) for k, v in env.items()}, timeout=300)
        assert result.returncode == 0, result.stdout + result.stderr
        # The tracker's shard accesses and DTensor's sharding propagation under the wrappers raise no
        # Python warning ("file:line: SomeWarning: ...", such as FakeTensor's "Accessing the data pointer"
        # deprecation). torch's own C++ log lines ("[W1203 ...] Warning: ...", from gloo and the store)
        # come and go with timing.
        assert not PYTHON_WARNING.findall(result.stderr), result.stderr
        return tmp_path / out

    good = hsdp("good")
    names = {}  # rank -> the names of its sharded parameters
    for recs in read_trace_files(good, "VAR").values():
        for r in recs:
            if "@shard" in r["var_name"]:
                names.setdefault(r["meta_vars"]["_DATA_PARALLEL_RANK"], set()).add(r["var_name"])
    assert names[0] == names[2] == {f"model.{i}.{p}@shard(0)" for i in (0, 2) for p in ("weight", "bias")}
    assert names[1] == names[3] == {f"model.{i}.{p}@shard(1)" for i in (0, 2) for p in ("weight", "bias")}
    result = subprocess.run(["traincheck-infer", "-f", "good", "-o", "inv.json"], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    cross = [line for line in (tmp_path / "inv.json").read_text().splitlines()
             if json.loads(line)["relation"] == "ConsistencyRelation"
             and [p.get("attr_name") for p in json.loads(line)["params"]] == ["data", "data"]]
    assert cross
    (tmp_path / "cross.json").write_text("\n".join(cross) + "\n")

    bad = hsdp("bad", "-i", "cross.json", PERTURB_STEP=3)
    entries = failed(bad)
    assert entries
    for e in entries:
        assert {r["meta_vars._DATA_PARALLEL_RANK"] for r in e["trace"]} == {0, 2}
        assert {r["var_name"] for r in e["trace"]} == {"model.0.weight@shard(0)"}
        assert min(r["meta_vars.step"] for r in e["trace"]) >= 3
    by_rank = {s["cross_rank"]["rank"]: s for s in summaries(bad).values()}
    assert by_rank[0]["violations"] > 0 and by_rank[2]["violations"] > 0
    assert by_rank[1]["violations"] == 0 and by_rank[3]["violations"] == 0


# The shape of a class-based DDP loop: its batches go to self._run_batch, the loop in a method.
TRAINER_CLASS_SCRIPT = """
import os
import torch, torch.distributed as dist, torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, model, train_data, optimizer, rank):
        self.model, self.train_data, self.optimizer, self.rank = model, train_data, optimizer, rank
        self.steps = 0

    def _run_batch(self, x):
        self.optimizer.zero_grad()
        self.model(x).sum().backward()
        self.steps += 1
        if self.steps == int(os.environ.get("PERTURB_STEP", "-1")) and self.rank == 1:
            with torch.no_grad():
                self.model.module[0].weight[3, 3] += 1e-3
        self.optimizer.step()

    def train(self, epochs):
        for epoch in range(epochs):
            for x in self.train_data:
                self._run_batch(x)


dist.init_process_group("gloo")
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2)))
torch.manual_seed(1)
Trainer(model, list(torch.randn(5, 4, 8)), torch.optim.SGD(model.parameters(), lr=0.1), dist.get_rank()).train(2)
dist.destroy_process_group()
"""


def test_a_class_based_ddp_loop_is_compared_across_ranks_with_the_default_pack_online_as_offline(tmp_path):
    write_script(tmp_path, "ddp.py", TRAINER_CLASS_SCRIPT)
    (tmp_path / "run.sh").write_text(TORCHRUN)
    result = collect(tmp_path, "-p", "ddp.py", "-s", "run.sh", "--output-dir", "out",
                     env={"PERTURB_STEP": "4"}, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    out = tmp_path / "out"
    online = {e["invariant"]["relation"] for e in failed(out)}
    assert "ConsistencyRelation" in online, result.stderr
    offline = subprocess.run(["traincheck-check", "-f", "out", "-i", "pack:default", "-o", "checked"], cwd=tmp_path,
                             capture_output=True, text=True, timeout=300)
    assert offline.returncode == 0, offline.stderr
    summary = json.loads(next((tmp_path / "checked").glob("*/violations_summary.json")).read_text())
    assert {row["relation_type"] for row in summary["violations"]} == online, offline.stderr
