#!/usr/bin/env bash
# All tests: installs dependencies and the package, then the C++ unit tests (CTest), pytest, and the
# sanitizer builds and fuzz targets (scripts/run_sanitizers.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
python3 -m pip install -q --no-build-isolation .
cmake -S . -B build/tests -G Ninja -DTRAINCHECK_BUILD_TESTS=ON -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/tests -j2
ctest --test-dir build/tests --output-on-failure -j2
python3 -m pytest -q tests/python
SKIP_DEPS=1 bash scripts/run_sanitizers.sh
