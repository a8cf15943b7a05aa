#!/usr/bin/env bash
# All tests: installs dependencies and the package, then the C++ unit tests (CTest), pytest, and the
# sanitizer builds and fuzz targets (scripts/run_sanitizers.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
# A golden update request left in the environment would rewrite the goldens the tests compare with.
unset TC_UPDATE_GOLDEN
bash scripts/install_deps.sh
# One Release build serves both: the package install builds in build/tests with the C++ tests and
# benchmarks switched on, so the engine is compiled once (a second build of it was a quarter of CI's time).
python3 -m pip install -q --no-build-isolation -C build-dir=build/tests -C cmake.define.TRAINCHECK_BUILD_TESTS=ON .
# --timeout: a test that hangs fails with its name instead of holding CI to its limit (none takes 10 s).
ctest --test-dir build/tests --output-on-failure -j2 --timeout 300
# The pytest tests spend most of their time in one single-threaded Python process each (collect runs a
# training script in a subprocess), so two workers use both cores. Their times range from a second to two
# minutes: a worker that runs out of tests takes some of the other's (worksteal). The slowest are listed.
python3 -m pytest -q -n 2 --dist worksteal --durations 15 tests/python
SKIP_DEPS=1 bash scripts/run_sanitizers.sh
