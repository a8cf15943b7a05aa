"""The overhead runner: commands, skipping unavailable methods, time limits, and one end-to-end run on a
tiny fake workload (no torch in it) that stops making progress under the settrace baseline."""
import csv
import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from eval.perf_overhead import analysis  # noqa: E402
from eval.perf_overhead import run as perf_run  # noqa: E402

# Writes --iters iteration times (0.01 * (i + 1)); after `--stall-after` iterations it hangs, and under a
# tracer (the settrace baseline) it hangs after 3. It stands for a method too slow to finish.
FAKE_WORKLOAD = textwrap.dedent("""
    import argparse, sys, time
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--stall-after", type=int, default=-1)
    args = parser.parse_args()
    stall_after = 3 if sys.gettrace() is not None else args.stall_after
    with open("iteration_times.txt", "w") as f, open("iteration_cpu_times.txt", "w") as cpu:
        for i in range(args.iters):
            if i == stall_after:
                time.sleep(600)
            f.write(f"{0.01 * (i + 1)}\\n")
            f.flush()
            cpu.write(f"{0.001 * (i + 1)}\\n")
            cpu.flush()
""")


@pytest.fixture
def fake_workloads(tmp_path):
    root = tmp_path / "workloads"
    (root / "sleepy").mkdir(parents=True)
    (root / "sleepy" / "main.py").write_text(FAKE_WORKLOAD)
    (root / "sleepy" / "md-config.yml").write_text("pyscript: main.py\nmodules_to_instr: [torch]\n")
    return root


def options(tmp_path, workloads_dir, **kw):
    base = dict(workloads=["sleepy"], methods=["naive"], iters=8, repeats=1, warmup=1,
                out=tmp_path / "res", workloads_dir=workloads_dir, invariants=tmp_path / "missing.json")
    base.update(kw)
    return perf_run.Options(**base)


def test_collector_commands_pass_script_args_after_double_dash(tmp_path, monkeypatch):
    monkeypatch.setattr(perf_run, "find_collector", lambda peer_venv=None: Path("/x/bin/traincheck-collect"))
    inv = tmp_path / "inv.json"
    opts = options(tmp_path, tmp_path, iters=7, invariants=inv, track_vars=True)
    src, out = tmp_path / "src", tmp_path / "out"
    cmd = perf_run.build_command("selective", src, out, opts)
    assert cmd[:5] == ["/x/bin/traincheck-collect", "--use-config", "--config", str(src / "md-config-var.yml"),
                       "--output-dir"]
    assert cmd[cmd.index("-i") + 1] == str(inv.resolve())
    assert cmd[cmd.index("--") + 1:] == ["--device", "cpu", "--iters", "7"]
    full = perf_run.build_command("monkey-patch", src, out, options(tmp_path, tmp_path))
    assert "-i" not in full and full[3] == str(src / "md-config.yml") and "--instr-descriptors" not in full
    assert "--no-pack" in full  # the original's full mode records only
    default = perf_run.build_command("default", src, out, options(tmp_path, tmp_path))
    assert [a for a in full if a != "--no-pack"] == default  # what collect does given nothing else: the pack checked
    descriptors = perf_run.build_command(perf_run.DESCRIPTOR_METHOD, src, out, options(tmp_path, tmp_path))
    assert descriptors[: descriptors.index("--")] == full[: full.index("--") - 1] + ["--instr-descriptors", "--no-pack"]
    assert perf_run.DESCRIPTOR_METHOD not in perf_run.BASE_METHODS  # only when named
    settrace = perf_run.build_command("settrace", src, out, opts)
    assert settrace[1] == str(perf_run.SETTRACE_RUNNER) and settrace[-4:] == ["--device", "cpu", "--iters", "7"]


def test_peer_methods_use_a_launcher_because_the_original_takes_no_script_args(tmp_path):
    peer = tmp_path / "peer"
    (peer / "bin").mkdir(parents=True)
    (peer / "bin" / "traincheck-collect").write_text("#!/bin/sh\n")
    src = tmp_path / "src"
    src.mkdir()
    (src / "md-config.yml").write_text("pyscript: main.py\nmodules_to_instr: [torch]\n")
    opts = options(tmp_path, tmp_path, iters=4, peer_venv=peer)
    cmd = perf_run.build_command("peer-monkey-patch", src, tmp_path / "out", opts)
    assert cmd[0] == str(peer / "bin" / "traincheck-collect") and "--" not in cmd
    config = Path(cmd[cmd.index("--config") + 1]).read_text()
    assert f"shscript: {src / 'run.sh'}" in config and "pyscript: main.py" in config
    assert f"{peer}/bin/python main.py --device cpu --iters 4" in (src / "run.sh").read_text()


def test_unavailable_methods_are_skipped_with_a_reason(tmp_path, monkeypatch, fake_workloads):
    monkeypatch.setattr(perf_run, "find_collector", lambda peer_venv=None: None)
    opts = options(tmp_path, fake_workloads, methods=["naive", "monkey-patch", "selective", "peer-selective"])
    runnable, skipped = perf_run.plan_methods(opts)
    assert runnable == ["naive"]
    assert "traincheck-collect" in skipped["monkey-patch"]
    assert "--peer-venv" in skipped["peer-selective"]
    lines = []
    perf_run.run_evaluation(opts, printer=lambda *a, **k: lines.append(" ".join(map(str, a))))
    assert any(line.startswith("skipping monkey-patch: traincheck-collect") for line in lines)
    assert (opts.out / "e2e_sleepy_naive.txt").is_file()
    assert not (opts.out / "e2e_sleepy_monkey-patch.txt").exists()


def test_selective_is_skipped_without_deployed_invariants(tmp_path, monkeypatch, fake_workloads):
    monkeypatch.setattr(perf_run, "find_collector", lambda peer_venv=None: Path("/x/traincheck-collect"))
    opts = options(tmp_path, fake_workloads, methods=["selective"])
    assert "no deployed invariants" in perf_run.unavailable_reason("selective", opts)
    opts.invariants.write_text("{}\n")
    assert perf_run.unavailable_reason("selective", opts) is None


def test_time_limit_keeps_completed_iterations_and_is_not_repeated(tmp_path, fake_workloads):
    opts = options(tmp_path, fake_workloads, repeats=2, time_limits={"naive": 2.0},
                   workload_args=["--stall-after", "3"])
    records = perf_run.run_evaluation(opts, printer=lambda *a, **k: None)
    assert [(r.round, r.status, r.iterations) for r in records] == [(1, "time limit", 3)]
    assert analysis.read_iteration_times(opts.out / "e2e_sleepy_naive.txt") == [0.01, 0.02, 0.03]
    assert analysis.read_iteration_times(opts.out / "cpu" / "e2e_sleepy_naive.txt") == [0.001, 0.002, 0.003]
    assert (opts.out / "raw" / "sleepy_naive_r1.txt").is_file()
    assert not (opts.out / "runs" / "sleepy_naive_r1").exists()  # run folders are removed by default
    with open(opts.out / "runs.csv") as f:
        assert list(csv.DictReader(f))[0]["status"] == "time limit"


def test_repeats_are_merged_per_iteration(tmp_path, fake_workloads):
    opts = options(tmp_path, fake_workloads, repeats=2, iters=4)
    records = perf_run.run_evaluation(opts, printer=lambda *a, **k: None)
    assert [(r.round, r.status) for r in records] == [(1, "ok"), (2, "ok")]
    assert analysis.read_iteration_times(opts.out / "e2e_sleepy_naive.txt") == [0.01, 0.02, 0.03, 0.04]


def test_time_limit_arguments():
    limits, default = perf_run.parse_time_limits(["settrace=30", "monkey-patch=90"])
    assert limits == {"settrace": 30.0, "monkey-patch": 90.0} and default == perf_run.DEFAULT_TIME_LIMIT
    limits, default = perf_run.parse_time_limits(["120"])
    assert default == 120.0 and limits["settrace"] == 120.0


def test_end_to_end_settrace_stopped_by_its_limit_still_counts(tmp_path, fake_workloads, capsys):
    out = tmp_path / "res"
    # settrace pre-imports torch (seconds), then the fake workload completes 3 iterations and hangs
    code = perf_run.main(["--workloads-dir", str(fake_workloads), "--methods", "naive", "settrace",
                          "--iters", "8", "--repeats", "1", "--warmup", "5", "--time-limit", "settrace=25",
                          "--out", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "stopped at the 25 s limit" in printed
    assert analysis.read_iteration_times(out / "e2e_sleepy_settrace.txt") == [0.01, 0.02, 0.03]
    assert len(analysis.read_iteration_times(out / "e2e_sleepy_naive.txt")) == 8
    rows = analysis.read_csv(out / "overhead_e2e.csv")
    # 3 iterations < warm-up 5: the last completed one is compared, 0.03 / 0.03
    assert [(r.task, r.method) for r in rows] == [("sleepy", "settrace")]
    assert rows[0].overhead == pytest.approx(1.0)
    assert [(r.task, r.method) for r in analysis.read_csv(out / "cpu" / "overhead_e2e.csv")] == [("sleepy", "settrace")]
    assert "sleepy" in printed and "settrace" in printed
    if importlib.util.find_spec("matplotlib") is not None:
        assert (out / "performance.png").stat().st_size > 0 and (out / "performance.pdf").stat().st_size > 0



# A workload on the shared timer: each timed iteration sleeps 10 ms and logs its monotonic start and end.
TIMED_WORKLOAD = textwrap.dedent("""
    import argparse, time
    import torch
    from workload_common import IterationTimer, add_common_arguments
    parser = argparse.ArgumentParser()
    add_common_arguments(parser, default_seed=0)
    args = parser.parse_args()
    with open("intervals.txt", "w") as log, \\
            IterationTimer(args.times_file, args.cpu_times_file, torch.device(args.device)) as timer:
        for i in range(args.iters):
            with timer.iteration():
                start = time.monotonic()
                time.sleep(0.01)
                log.write(f"{start} {time.monotonic()}\\n")
                log.flush()
""")


def test_methods_of_a_round_run_in_lockstep(tmp_path):
    root = tmp_path / "workloads"
    (root / "timed").mkdir(parents=True)
    (root / "timed" / "main.py").write_text(TIMED_WORKLOAD)
    (root / "timed" / "md-config.yml").write_text("pyscript: main.py\nmodules_to_instr: [torch]\n")
    (root / "workload_common.py").write_text((perf_run.WORKLOADS_DIR / "workload_common.py").read_text())
    opts = options(tmp_path, root, workloads=["timed"], methods=["naive", "monkey-patch"], iters=5,
                   keep_runs=True)
    records = perf_run.run_evaluation(opts, printer=lambda *a, **k: None)
    assert sorted((r.method, r.status, r.iterations) for r in records) == [("monkey-patch", "ok", 5),
                                                                           ("naive", "ok", 5)]
    runs = opts.out / "runs"
    logs = [[tuple(map(float, line.split())) for line in (runs / f"timed_{m}_r1" / "out" / "intervals.txt")
             .read_text().splitlines()] for m in ("naive", "monkey-patch")]
    sequence = [logs[m][i] for i in range(5) for m in range(2)]  # naive leads the ring in round 1
    for earlier, later in zip(sequence, sequence[1:]):
        assert earlier[1] <= later[0]
