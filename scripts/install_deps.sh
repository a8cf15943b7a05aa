#!/usr/bin/env bash
# Installs what building and testing need, idempotently: Debian packages for the C++ side, PyPI packages
# for the Python side (torch 2.13.0 is the CPU build that lies on disk on these machines).
set -euo pipefail
need_apt=()
dpkg -s libgtest-dev >/dev/null 2>&1 || need_apt+=(libgtest-dev)
dpkg -s libsimdjson-dev >/dev/null 2>&1 || need_apt+=(libsimdjson-dev)
# scripts/run_sanitizers.sh: GCC's sanitizer runtimes; clang and libFuzzer for the fuzz targets. chromium:
# the headless browser that tests/python/test_report_browser.py renders report.html in (~1 min to install).
for pkg in libasan8 libubsan1 libtsan2 clang-14 libclang-rt-14-dev chromium; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need_apt+=("$pkg")
done
if [ ${#need_apt[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get install -y "${need_apt[@]}" || { $SUDO apt-get update && $SUDO apt-get install -y "${need_apt[@]}"; }
fi
python3 -m pip install -q "torch==2.13.0" nanobind scikit-build-core pyyaml pytest pytest-xdist matplotlib ninja cmake
# The `report` extra, for tests/python/test_external_reporting.py (~40 s the first time; it skips without them).
python3 -m pip install -q wandb mlflow-skinny
# The `stacks` extra, for tests/python/test_transformers_trainer.py and test_lightning_trainer.py
# (~30-60 s the first time; they skip without them).
python3 -m pip install -q transformers accelerate lightning
