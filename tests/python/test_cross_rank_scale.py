"""Cross-rank checking chosen from the job's shape (cpp/check/online/cross_rank_topology.h), through the
real bindings: the launcher's LOCAL_RANK, LOCAL_WORLD_SIZE and GROUP_RANK reach the exchange, and 16
ranks in 4 simulated nodes, each a process with its own online session and a client of a real c10d
TCPStore (bench/cross_rank_scale.py's harness, no training), compare per node: the job's store serves
one call per node and step plus the reference's, a rank that diverges is reported within 2 steps, and
nothing else is said on stderr, whether one rank diverges or a whole node."""
import importlib.util
import types
from pathlib import Path

import pytest

from traincheck import cross_rank

REPO = Path(__file__).resolve().parents[2]


def test_the_node_shape_comes_from_the_launchers_environment(monkeypatch):
    monkeypatch.setenv("LOCAL_RANK", "3")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "8")
    monkeypatch.setenv("GROUP_RANK", "5")
    o = cross_rank.options()
    assert (o["local_rank"], o["local_world_size"], o["node"]) == (3, 8, 5)
    monkeypatch.delenv("GROUP_RANK")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "eight")
    o = cross_rank.options()
    assert (o["local_rank"], o["local_world_size"], o["node"]) == (3, 0, -1)  # unknown: chosen without nodes


def harness():
    spec = importlib.util.spec_from_file_location("cross_rank_scale", REPO / "bench" / "cross_rank_scale.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_sixteen_ranks_in_four_nodes_compare_per_node_and_report_a_divergent_rank():
    pytest.importorskip("torch.distributed")
    bench = harness()
    a = types.SimpleNamespace(world=16, local=4, vars=4, steps=12, warmup=3, diverge=8, step_ms=400, diverge_node=False)
    row = bench.run(a, 0, "default")
    assert row["mode"] == "per node"
    assert "16 ranks: per node, 4 nodes of 4" in row["plan"]
    # Per step: 4 folds, the reference's summary and 2 deletes of an old step's keys (node_fold_exchange.h).
    assert 0 < row["calls"] <= 4 + 3
    ring = bench.run(a, 1, "ring")
    assert ring["mode"] == "ring" and ring["calls"] > 2 * row["calls"]
    # A whole node diverging: its leader's fold differs, and the reference's records come through the store.
    a.diverge_node = True
    node = bench.run(a, 0, "default")
    for r in (row, ring, node):
        assert r["reporting"] >= 1 and 0 <= r["latency_steps"] <= 2
        assert r["other_lines"] == 0, "no lag, error or off line"


def test_a_killed_leader_leaves_its_node_checking_itself_and_the_job_running():
    """Node 2's leader (rank 8) is killed at step 4, then rank 9 of its node diverges at step 8: its node
    still finds it within 2 steps, names the dead leader as stopped, and every other rank finishes."""
    pytest.importorskip("torch.distributed")
    bench = harness()
    a = types.SimpleNamespace(world=16, local=4, vars=4, steps=14, warmup=3, diverge=8, step_ms=400, diverge_node=False,
                              kill_rank=8, kill_step=4)
    row = bench.run(a, 0, "default")
    assert row["finished"] == 15
    assert row["reporting"] >= 1 and 0 <= row["latency_steps"] <= 2
    assert any("rank 8 has not published" in line for line in row["others"]), row["others"]
    assert not any("cross-rank check off" in line for line in row["others"]), row["others"]
