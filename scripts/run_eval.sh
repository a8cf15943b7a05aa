#!/usr/bin/env bash
# The main job: the overhead evaluation (paper Figure 7) on the CPU with its defaults.
# Extra arguments go to the runner (see eval/perf_overhead/README.md), e.g. --device cuda, or
# --seed-workloads to add the paper's own scripts from ../shared/seed-workloads (~15 min more on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
python3 -m pip install -q --no-build-isolation .
python3 -m eval.perf_overhead.run "$@"
