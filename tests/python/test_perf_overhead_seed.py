"""The paper's own workloads in the overhead harness: run.sh rewritten for the CPU, the paper's commands,
the environment (no GLIBC_TUNABLES), the torchvision stand-in, and 2-iteration runs of the scripts."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from eval.perf_overhead import run as perf_run  # noqa: E402
from eval.perf_overhead import seed_workloads as seeds  # noqa: E402

needs_seed = pytest.mark.skipif(not seeds.available_seed_workloads(),
                                reason=f"no seed workloads in {seeds.seed_dir()} (set {seeds.SEED_DIR_ENV})")


def test_run_sh_is_rewritten_for_the_cpu_as_run_all_xsh_reads_it():
    assert (seeds.cpu_command("python main.py --cuda --epochs 2 --model Transformer --lr 5", "transformer", "cpu")
            == "python main.py --epochs 2 --model Transformer --lr 5 --dry-run")
    assert (seeds.cpu_command("CUDA_VISIBLE_DEVICES=0 python3 main.py \\\n --dummy", "resnet18", "cpu")
            == "python3 main.py --dummy -b 16 --epochs 1")
    assert seeds.cpu_command("python3 main.py --epochs 10", "mnist", "cpu") == "python3 main.py --epochs 10"
    # on cuda the paper's command is kept as it is
    assert (seeds.cpu_command("python main.py --cuda --epochs 2", "transformer", "cuda")
            == "python main.py --cuda --epochs 2")


def test_the_papers_commands(tmp_path):
    src, out = tmp_path / "src", tmp_path / "out"
    assert seeds.build_command("seed-transformer", "naive", src, out) == ["bash", str(src / "run.sh")]
    full = seeds.build_command("seed-transformer", "monkey-patch", src, out)
    assert full == [sys.executable, "-m", "traincheck.collect_trace", "--use-config", "--config",
                    str(src / "md-config.yml"), "--output-dir", str(out)]
    selective = seeds.build_command("seed-mnist", "selective", src, out)
    assert selective[5:] == [str(src / "md-config-var.yml"), "--output-dir", str(out), "-i",
                             str(seeds.seed_dir() / "sampled_100_invariants.json")]


def test_seed_runs_get_the_papers_environment():
    base = {"GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=33554432", "MALLOC_ARENA_MAX": "1", "PATH": "/bin",
            "OMP_NUM_THREADS": "1"}
    env = seeds.environment("seed-mnist", "cpu", base)
    assert "GLIBC_TUNABLES" not in env and "MALLOC_ARENA_MAX" not in env
    assert env["PATH"].split(os.pathsep)[0] == str(Path(sys.executable).parent)
    assert env["PYTHONPATH"].split(os.pathsep)[0] == str(seeds.STANDIN_DIR)
    assert env[seeds.STANDIN_MAX_SAMPLES_ENV] == "640" and env["OMP_NUM_THREADS"] == "1"
    assert "PYTHONPATH" not in seeds.environment("seed-transformer", "cpu", {"PATH": "/bin"})


def run_standin(code, **env):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": str(seeds.STANDIN_DIR), **env}).stdout.split()


def test_the_torchvision_standin_gives_what_the_scripts_use():
    out = run_standin(
        "import torchvision, torchvision.datasets as d, torchvision.transforms as t, torchvision.models as m\n"
        "assert torchvision.__file__.startswith(%r)\n"
        "tf = t.Compose([t.ToTensor(), t.Normalize((0.1307,), (0.3081,))])\n"
        "x, y = d.MNIST('../data', train=True, download=True, transform=tf)[0]\n"
        "print(len(d.MNIST('../data', train=False)), tuple(x.shape), x.dtype, type(y).__name__)\n"
        "f = d.FakeData(1281167, (3, 224, 224), 1000, t.ToTensor())\n"
        "a, b = f[7], f[7]\n"
        "print(len(f), tuple(a[0].shape), bool((a[0] == b[0]).all()), float(a[0].max()) <= 1.0)\n"
        "names = [n for n in m.__dict__ if n.islower() and not n.startswith('__') and callable(m.__dict__[n])]\n"
        "print(names, sum(p.numel() for p in m.resnet18().parameters()))\n" % str(seeds.STANDIN_DIR))
    assert out == ["10000", "(1,", "28,", "28)", "torch.float32", "int",
                   "1281167", "(3,", "224,", "224)", "True", "True",
                   "['resnet18']", "11689512"]  # torchvision's ResNet-18 has 11,689,512 parameters
    capped = run_standin("import torchvision.datasets as d; print(len(d.MNIST('x')), len(d.FakeData(50)))",
                         **{seeds.STANDIN_MAX_SAMPLES_ENV: "20"})
    assert capped == ["20", "20"]


@needs_seed
def test_the_transformer_copy_has_a_train_file_with_the_same_vocabulary(tmp_path, monkeypatch):
    monkeypatch.setattr(seeds, "TRANSFORMER_EVAL_LINES", 5)
    seeds.prepare_copy("seed-transformer", tmp_path / "src", "cpu")
    corpus = tmp_path / "src" / "data" / "wikitext-2"
    original = seeds.seed_dir() / "transformer" / "data" / "wikitext-2"
    assert (corpus / "train.txt").read_text() == (original / "valid.txt").read_text() + (original / "test.txt").read_text()
    assert len((corpus / "valid.txt").read_text().splitlines()) == 5
    assert (tmp_path / "src" / "run.sh").read_text() == "python main.py --epochs 2 --model Transformer --lr 5 --dry-run\n"
    assert (tmp_path / "src" / "main.py").read_text() == (seeds.seed_dir() / "transformer" / "main.py").read_text()


def collector_available():
    return perf_run.find_collector() is not None


@needs_seed
@pytest.mark.parametrize("workload,method", [("seed-mnist", "naive"), ("seed-mnist", "monkey-patch"),
                                             ("seed-resnet18", "naive"), ("seed-transformer", "naive"),
                                             ("seed-transformer", "selective")])
def test_two_iteration_runs_of_the_papers_scripts(tmp_path, monkeypatch, workload, method):
    if method != "naive" and not collector_available():
        pytest.skip("traincheck-collect is not installed")
    # Two iterations: MNIST 2 batches x 1 epoch, ResNet-18 2 batches of 2 at 224x224, the transformer's
    # --dry-run (one batch per epoch, 2 epochs) with 3-line evaluation files.
    monkeypatch.setitem(seeds.CPU_ARGS, "mnist", ["--epochs", "1", "--batch-size", "4", "--test-batch-size", "8"])
    monkeypatch.setitem(seeds.CPU_ARGS, "resnet18", ["-b", "2", "--epochs", "1"])
    monkeypatch.setitem(seeds.STANDIN_MAX_SAMPLES, "mnist", 8)
    monkeypatch.setitem(seeds.STANDIN_MAX_SAMPLES, "resnet18", 4)
    monkeypatch.setattr(seeds, "TRANSFORMER_EVAL_LINES", 3)
    opts = perf_run.Options(workloads=[workload], methods=[method], out=tmp_path / "res", keep_runs=True)
    for sub in ("raw", "logs", "runs"):
        (opts.out / sub).mkdir(parents=True)
    record, outcome = perf_run.run_one(workload, method, 0, opts)
    log = (opts.out / "logs" / f"{workload}_{method}_r1.log").read_text()
    assert record.status == "ok", log
    assert len(outcome.times) == 2, log
    assert record.peak_rss_mb > 100  # torch alone is more than that
    if method != "naive":
        trace_dir = opts.out / "runs" / f"{workload}_{method}_r1" / "out"
        assert any(p.name.startswith("trace_") for p in trace_dir.iterdir()), log
    shutil.rmtree(opts.out / "runs")
