"""Checks, without any tool, that every case's bug really manifests.

Runs each case's two variants as a user would (`python main.py --seed N [--bug]`, or `bash run.sh ...` for
torchrun cases), requires exit status 0 from both (the bugs are silent), and compares the final
`SYMPTOM key=value ...` line each program prints against the expectation below.

    python eval/detection/cases/check_symptoms.py                  # every case, seed 1
    python eval/detection/cases/check_symptoms.py -k ddp --seed 2  # cases whose name contains "ddp"
    python eval/detection/cases/check_symptoms.py --determinism    # also: the correct variant twice, same output

Runs one program at a time (the DDP cases start 2 ranks).
"""
import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
REQUIRED_KEYS = {"description", "bug_class", "trigger_step", "launcher", "symptom"}

# case -> (symptom key, predicate on the correct run's symptoms, predicate on the buggy run's symptoms)
EXPECT = {
    "eval_mode_after_val": ("model_training", lambda s: s["model_training"] == "True", lambda s: s["model_training"] == "False"),
    "spectral_norm_eval_first": ("sn_sigma_ratio", lambda s: float(s["sn_sigma_ratio"]) > 0.9, lambda s: abs(float(s["sn_sigma_ratio"])) < 0.5),
    "missing_zero_grad": ("max_first_layer_grad_norm", lambda s: float(s["max_first_layer_grad_norm"]) < 2.0, lambda s: float(s["max_first_layer_grad_norm"]) > 5.0),
    "optimizer_holds_frozen_params": ("head_weight_change", lambda s: float(s["head_weight_change"]) > 1e-2, lambda s: float(s["head_weight_change"]) == 0.0),
    "rollback_detaches_optimizer": ("weight_change_after_first_skip", lambda s: float(s["weight_change_after_first_skip"]) > 1e-3, lambda s: float(s["weight_change_after_first_skip"]) == 0.0),
    "ddp_params_replaced_after_wrap": ("rank_weight_diff", lambda s: float(s["rank_weight_diff"]) < 1e-6, lambda s: float(s["rank_weight_diff"]) > 1e-3),
    "ddp_ranks_different_init": ("rank_weight_diff", lambda s: float(s["rank_weight_diff"]) < 1e-6, lambda s: float(s["rank_weight_diff"]) > 1e-2),
    "autocast_rope_bf16": ("rope_cos_max_err", lambda s: float(s["rope_cos_max_err"]) < 5e-3, lambda s: float(s["rope_cos_max_err"]) > 1e-2),
    "identical_layer_init": ("identical_hidden_layers_at_init", lambda s: int(s["identical_hidden_layers_at_init"]) == 0, lambda s: int(s["identical_hidden_layers_at_init"]) >= 2),
    "generate_overruns_max_new_tokens": (
        "max_generated_new_tokens",
        lambda s: int(s["max_generated_new_tokens"]) <= int(s["max_new_tokens"]),
        lambda s: int(s["max_generated_new_tokens"]) > int(s["max_new_tokens"]),
    ),
    "lr_scheduler_never_stepped": ("final_lr", lambda s: float(s["final_lr"]) < 1e-3, lambda s: float(s["final_lr"]) == 0.01),
    "grad_clip_after_step": (
        "max_update_norm_over_lr",
        lambda s: float(s["max_update_norm_over_lr"]) <= float(s["max_norm"]) * 1.001,
        lambda s: float(s["max_update_norm_over_lr"]) > float(s["max_norm"]) * 1.5,
    ),
    "detached_layer_output": ("encoder_first_layer_grad_norm", lambda s: float(s["encoder_first_layer_grad_norm"]) > 1e-3, lambda s: float(s["encoder_first_layer_grad_norm"]) == 0.0),
    "batchnorm_frozen_in_training": ("bn1_batches_tracked", lambda s: int(s["bn1_batches_tracked"]) > 0, lambda s: int(s["bn1_batches_tracked"]) == 0),
    "dataloader_workers_same_seed": ("repeated_augmentations", lambda s: int(s["repeated_augmentations"]) == 0, lambda s: int(s["repeated_augmentations"]) > 0),
    "grad_accum_zero_grad_every_microstep": ("accumulated_grad_max_err", lambda s: float(s["accumulated_grad_max_err"]) < 1e-4, lambda s: float(s["accumulated_grad_max_err"]) > 1e-2),
    "grad_accum_never_zero_grad": ("accumulated_grad_max_err", lambda s: float(s["accumulated_grad_max_err"]) < 1e-4, lambda s: float(s["accumulated_grad_max_err"]) > 1e-2),
    "optimizer_step_missing": ("head_weight_moved", lambda s: float(s["head_weight_moved"]) > 1e-2, lambda s: float(s["head_weight_moved"]) == 0.0),
    "amp_clip_before_unscale": ("final_mse", lambda s: float(s["final_mse"]) < 0.5, lambda s: float(s["final_mse"]) > 0.7),
}


def run_case(case_dir: Path, launcher: str, extra: list, seed: int, bug: bool, timeout: int):
    args = [*map(str, extra), "--seed", str(seed)] + (["--bug"] if bug else [])
    cmd = ["bash", "run.sh", *args] if launcher == "torchrun" else [sys.executable, "main.py", *args]
    start = time.time()
    proc = subprocess.run(cmd, cwd=case_dir, capture_output=True, text=True, timeout=timeout)
    return proc, time.time() - start


def parse_symptom(stdout: str) -> dict:
    lines = [line for line in stdout.splitlines() if line.startswith("SYMPTOM ")]
    if not lines:
        raise ValueError("no SYMPTOM line")
    return dict(re.findall(r"(\w+)=(\S+)", lines[-1]))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("-k", "--filter", default="", help="only cases whose folder name contains this")
    parser.add_argument("--determinism", action="store_true", help="run the correct variant twice and compare")
    parser.add_argument("--timeout", type=int, default=300)
    args = parser.parse_args()

    case_dirs = sorted(p.parent for p in HERE.glob("*/case.yml") if args.filter in p.parent.name)
    missing = set(EXPECT) - {p.parent.name for p in HERE.glob("*/case.yml")}
    failures = []
    if missing:
        failures.append(f"cases without a folder: {sorted(missing)}")
    for case_dir in case_dirs:
        name = case_dir.name
        meta = yaml.safe_load((case_dir / "case.yml").read_text())
        problems = []
        if not REQUIRED_KEYS <= set(meta):
            problems.append(f"case.yml lacks {sorted(REQUIRED_KEYS - set(meta))}")
        if meta.get("launcher") == "torchrun" and not (case_dir / "run.sh").exists():
            problems.append("torchrun case without run.sh")
        if name not in EXPECT:
            problems.append("no expectation in check_symptoms.py")
        key, good_ok, bug_ok = EXPECT.get(name, (None, None, None))
        outputs = {}
        for bug in (False, True):
            label = "bug " if bug else "good"
            try:
                proc, secs = run_case(case_dir, meta.get("launcher", "python"), meta.get("args") or [], args.seed, bug, args.timeout)
            except subprocess.TimeoutExpired:
                problems.append(f"{label}: timed out")
                continue
            if proc.returncode != 0:
                problems.append(f"{label}: exit {proc.returncode}: {proc.stderr[-800:]}")
                continue
            outputs[bug] = proc.stdout
            try:
                symptom = parse_symptom(proc.stdout)
                ok = (bug_ok if bug else good_ok)(symptom) if key else False
            except (ValueError, KeyError) as exc:
                problems.append(f"{label}: cannot read symptom ({exc!r})")
                continue
            shown = " ".join(f"{k}={v}" for k, v in symptom.items())
            print(f"{name:40s} {label} {secs:5.1f}s  {shown}  {'ok' if ok else 'UNEXPECTED'}", flush=True)
            if not ok:
                problems.append(f"{label}: unexpected symptom {shown}")
        if args.determinism and False in outputs:
            try:
                proc, _ = run_case(case_dir, meta.get("launcher", "python"), meta.get("args") or [], args.seed, False, args.timeout)
                if proc.stdout != outputs[False]:  # torchrun's own messages go to stderr
                    problems.append("good: two runs with the same seed print different output")
                else:
                    print(f"{name:40s} good deterministic", flush=True)
            except subprocess.TimeoutExpired:
                problems.append("good (rerun): timed out")
        failures += [f"{name}: {p}" for p in problems]

    if failures:
        print("\nFAILED:\n  " + "\n  ".join(failures))
        sys.exit(1)
    print(f"\nall {len(case_dirs)} cases show their symptom (seed {args.seed})")


if __name__ == "__main__":
    main()
