"""The pack corpus (eval/pack_corpus): its manifest lists every program and only them, covers the families
and features its README lists, shares nothing with the detection cases, and a few programs run plainly
(no tool), reproducibly."""

import hashlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from eval.detection.cases import CASES_DIR, discover  # noqa: E402
from eval.pack_corpus.manifest import PROGRAMS_DIR, ManifestError, load  # noqa: E402

REQUIRED_FAMILIES = {"mlp", "cnn", "resnet", "rnn", "transformer_encoder", "transformer_decoder", "gnn", "vae",
                     "gan", "embedding"}
REQUIRED_FEATURES = {"sgd", "adam", "adamw", "adadelta", "rmsprop", "scheduler", "no_scheduler", "autocast_bf16",
                     "grad_accumulation", "grad_clipping", "dataloader_workers", "validation", "checkpoint",
                     "frozen_layers", "fine_tuning", "two_models", "ddp", "fsdp", "hf_trainer", "lightning",
                     "torch_compile"}


@pytest.fixture(scope="module")
def programs():
    return load()


def test_the_manifest_lists_every_program_folder_and_only_them(programs):
    assert len(programs) >= 30
    folders = {p.name for p in PROGRAMS_DIR.iterdir() if p.is_dir() and not p.name.startswith("__")}
    assert {p.name for p in programs} == folders


def test_the_corpus_covers_the_families_features_and_styles_asked_for(programs):
    assert REQUIRED_FAMILIES <= {p.family for p in programs}
    assert REQUIRED_FEATURES <= {f for p in programs for f in p.features}
    # Optimizers both with and without a scheduler; several styles of one thing.
    for opt in ("sgd", "adam", "adamw", "adadelta", "rmsprop"):
        with_sched = {("scheduler" in p.features) for p in programs if opt in p.features}
        assert with_sched == {True, False}, opt
    assert {p.style for p in programs} == {"hand", "trainer"}
    torchrun = [p for p in programs if p.launcher == "torchrun"]
    assert {"ddp", "fsdp"} <= {f for p in torchrun for f in p.features}
    assert all(p.shell_launcher.is_file() for p in torchrun)


def test_every_program_follows_the_contract(programs):
    for p in programs:
        source = p.script.read_text()
        assert '"--seed"' in source, f"{p.script}: no --seed argument"
        assert "manual_seed" in source or "seed_everything" in source, f"{p.script}: not seeded"
        assert not re.search(r"^\s*(import|from)\s+traincheck", source, re.M), f"{p.script}: imports traincheck"
        assert "FINAL " in source, f"{p.script}: prints no FINAL line"
        for forbidden in ("torchvision", "from_pretrained", "load_dataset", "urlopen", ".cuda("):
            assert forbidden not in source, f"{p.script}: uses {forbidden}"
        assert not (p.folder / "case.yml").exists(), f"{p.folder}: a case.yml would make it a detection case"


def test_the_corpus_is_disjoint_from_the_detection_cases(programs):
    cases = discover(CASES_DIR)
    assert cases
    assert not {p.name for p in programs} & {c.name for c in cases}
    digest = lambda path: hashlib.sha256(path.read_bytes()).hexdigest()  # noqa: E731
    case_digests = {digest(f) for c in cases for f in c.folder.glob("*.py")}
    assert not {digest(p.script) for p in programs} & case_digests
    # And no case file lies under the corpus, nor a corpus program under the cases.
    assert not list((REPO / "eval" / "pack_corpus").rglob("case.yml"))
    assert CASES_DIR not in PROGRAMS_DIR.parents and PROGRAMS_DIR not in CASES_DIR.parents


def test_a_malformed_manifest_names_the_file_and_the_program(tmp_path):
    (tmp_path / "programs" / "a").mkdir(parents=True)
    (tmp_path / "programs" / "a" / "main.py").write_text("")
    good = "families: [mlp]\nfeatures: [sgd]\nprograms:\n  - {name: a, family: mlp, launcher: python, style: hand, features: [sgd]}\n"
    path = tmp_path / "manifest.yml"
    path.write_text(good)
    assert [p.name for p in load(path, tmp_path / "programs")] == ["a"]
    for bad, message in ((good.replace("family: mlp,", "family: mpl,"), "family 'mpl'"),
                         (good.replace("features: [sgd]}", "features: [sdg]}"), "feature(s) ['sdg']"),
                         (good.replace("launcher: python", "launcher: mpirun"), "launcher must be"),
                         (good.replace("launcher: python", "launcher: torchrun"), "run.sh is missing"),
                         (good.replace("style: hand, ", ""), "missing field(s) ['style']"),
                         (good + "  - {name: a, family: mlp, launcher: python, style: hand, features: [sgd]}\n",
                          "listed twice")):
        path.write_text(bad)
        with pytest.raises(ManifestError) as err:
            load(path, tmp_path / "programs")
        assert str(path) in str(err.value) and "'a'" in str(err.value) and message in str(err.value)


def _run(program, seed, cwd):
    proc = subprocess.run(program.plain_command(seed), cwd=cwd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    finals = [line for line in proc.stdout.splitlines() if line.startswith("FINAL ")]
    assert len(finals) == 1, proc.stdout[-2000:]
    return finals[0]


def test_the_fastest_programs_run_plainly_and_reproducibly(programs, tmp_path):
    by = {p.name: p for p in programs}
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = _run(by["mlp_sgd_plain"], 1, tmp_path / "a")
    assert _run(by["mlp_sgd_plain"], 1, tmp_path / "b") == first           # same seed, same run
    assert _run(by["mlp_sgd_plain"], 2, tmp_path / "b") != first           # another seed, another run
    _run(by["mlp_checkpoint_resume"], 1, tmp_path / "a")
    assert (tmp_path / "a" / "checkpoints" / "last.pt").is_file()          # it saved into its working folder
    _run(by["mlp_autocast_bf16"], 1, tmp_path / "a")
