"""The paper's own Figure 7 workloads (`../shared/seed-workloads`: the public artifact's
`performance_overhead/overhead-e2e/`), run unchanged with the paper's commands (README.md here, "The
paper's own workloads").

The third-party code is never copied into the repository: each run copies the seed's workload folder into
its private run folder. Per workload the paper drives the script through its `run.sh` (run_all.xsh: the
naive run executes run.sh's command in the workload folder; the collector runs it as its `shscript`):

    naive        bash run.sh                                   (cwd: the workload's copy)
    monkey-patch python -m traincheck.collect_trace --use-config --config md-config.yml --output-dir OUT
    selective    python -m traincheck.collect_trace --use-config --config md-config-var.yml --output-dir OUT
                 -i sampled_100_invariants.json

On the CPU, run.sh's command is rewritten in the copy: `--cuda` and `CUDA_VISIBLE_DEVICES=...` dropped,
and the arguments in CPU_ARGS appended (CPU_CHANGES says why). The scripts write their own per-iteration
times to `iteration_times.txt` in their working directory (MD_BATCH_FILE_NAME).
"""
from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SEED_DIR_ENV = "TC_SEED_WORKLOADS"
DEFAULT_SEED_DIR = REPO.parent / "shared" / "seed-workloads"
STANDIN_DIR = HERE / "torchvision_standin"  # a stand-in `torchvision` package (its README)
STANDIN_MAX_SAMPLES_ENV = "TC_STANDIN_MAX_SAMPLES"
SELECTIVE_INVARIANTS = "sampled_100_invariants.json"

# Harness workload name -> the seed's folder.
SEED_WORKLOADS = {"seed-mnist": "mnist", "seed-resnet18": "resnet18", "seed-transformer": "transformer"}
SEED_METHODS = ("naive", "monkey-patch", "selective")
METHOD_CONFIGS = {"monkey-patch": "md-config.yml", "selective": "md-config-var.yml"}

# What the CPU default appends to run.sh's command, and the dataset cap of the torchvision stand-in.
CPU_ARGS = {
    "transformer": ["--dry-run"],
    "mnist": [],
    "resnet18": ["-b", "16", "--epochs", "1"],
}
STANDIN_MAX_SAMPLES = {"mnist": 640, "resnet18": 160}
# The transformer's CPU corpus: train.txt = valid.txt + test.txt (train.txt is not in the artifact), then
# valid.txt and test.txt cut to their first lines. The vocabulary is the words of the three files, so it
# stays that of valid + test (18,328 words: the logits of the issue-23 runs), while the three full
# evaluation passes of a --dry-run shrink from ~1,900 to ~200 steps.
TRANSFORMER_EVAL_LINES = 400
CPU_CHANGES = {
    "transformer": "--cuda dropped; --dry-run (one training batch per epoch, then the full validation pass; "
                   "the test pass at the end); train.txt = valid.txt + test.txt, then valid.txt and test.txt "
                   f"cut to their first {TRANSFORMER_EVAL_LINES} lines (same vocabulary)",
    "mnist": "MNIST from the torchvision stand-in, capped at 640 samples (10 batches of 64 per epoch, "
             "so --epochs 10 gives 100 iterations)",
    "resnet18": "CUDA_VISIBLE_DEVICES dropped; -b 16 --epochs 1; FakeData (224x224) from the stand-in, "
                "capped at 160 samples (10 iterations, then validation and the checkpoint)",
}


def seed_dir() -> Path:
    return Path(os.environ.get(SEED_DIR_ENV, DEFAULT_SEED_DIR)).resolve()


def is_seed_workload(name: str) -> bool:
    return name in SEED_WORKLOADS


def available_seed_workloads(root: Path | None = None) -> list[str]:
    root = root or seed_dir()
    return [name for name, folder in SEED_WORKLOADS.items() if (root / folder / "main.py").is_file()]


def cpu_command(run_sh_text: str, folder: str, device: str) -> str:
    """run.sh's command as one line (run_all.xsh drops backslashes and line breaks), for `device`."""
    command = run_sh_text.replace("\\", " ").replace("\n", " ")
    if device == "cpu":
        command = re.sub(r"\bCUDA_VISIBLE_DEVICES=\S*\s*", "", command)
        command = re.sub(r"\s--cuda\b", "", command)
        command = " ".join([command.strip(), *CPU_ARGS[folder]])
    return " ".join(command.split())


def prepare_copy(name: str, src_dir: Path, device: str) -> None:
    """Copy the seed workload into `src_dir` and rewrite its run.sh for `device` (see the module doc)."""
    folder = SEED_WORKLOADS[name]
    shutil.copytree(seed_dir() / folder, src_dir, ignore=shutil.ignore_patterns("__pycache__"))
    for path in src_dir.rglob("*"):  # the shared copy is read-only; the run writes beside its files
        path.chmod(path.stat().st_mode | 0o200)
    src_dir.chmod(src_dir.stat().st_mode | 0o200)
    if folder == "transformer":
        prepare_corpus(src_dir / "data" / "wikitext-2", device)
    run_sh = src_dir / "run.sh"
    original = run_sh.read_text() if run_sh.is_file() else "python3 main.py"
    run_sh.write_text(cpu_command(original, folder, device) + "\n")


def prepare_corpus(corpus: Path, device: str) -> None:
    """train.txt, not in the public artifact (its README): valid.txt on cuda; on the CPU valid.txt +
    test.txt, with valid.txt and test.txt then cut (TRANSFORMER_EVAL_LINES)."""
    if (corpus / "train.txt").is_file():
        return
    if device != "cpu":
        shutil.copy2(corpus / "valid.txt", corpus / "train.txt")
        return
    valid, test = (corpus / "valid.txt").read_text(), (corpus / "test.txt").read_text()
    (corpus / "train.txt").write_text(valid + test)
    for name, text in (("valid.txt", valid), ("test.txt", test)):
        (corpus / name).write_text("".join(text.splitlines(keepends=True)[:TRANSFORMER_EVAL_LINES]))


def build_command(name: str, method: str, src_dir: Path, out_dir: Path) -> list[str]:
    if method == "naive":
        return ["bash", str(src_dir / "run.sh")]
    selective = ["-i", str(seed_dir() / SELECTIVE_INVARIANTS)] if method == "selective" else []
    return [sys.executable, "-m", "traincheck.collect_trace", "--use-config", "--config",
            str(src_dir / METHOD_CONFIGS[method]), "--output-dir", str(out_dir), *selective]


def environment(name: str, device: str, env: dict[str, str]) -> dict[str, str]:
    """The paper's environment: no GLIBC_TUNABLES or other malloc setting; `python` in run.sh is this
    interpreter; the torchvision stand-in first on the path where the workload needs it."""
    env = {k: v for k, v in env.items() if k != "GLIBC_TUNABLES" and not k.startswith("MALLOC_")}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    folder = SEED_WORKLOADS[name]
    if folder in STANDIN_MAX_SAMPLES:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(STANDIN_DIR), env.get("PYTHONPATH", "")) if p)
        if device == "cpu":
            env[STANDIN_MAX_SAMPLES_ENV] = str(STANDIN_MAX_SAMPLES[folder])
    return env
