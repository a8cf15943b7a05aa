#!/usr/bin/env bash
# Sanitizer and fuzzing checks of the C++ engine (part of scripts/run_tests.sh, so of CI). Each stage has
# its own build folder and fails on any finding:
#   asan  build/asan  every C++ test (CTest) built with -Werror, AddressSanitizer and UndefinedBehaviorSanitizer
#   tsan  build/tsan  the recorder's threaded tests (event stream, writer thread, record sink) under ThreadSanitizer
#   fuzz  build/fuzz  each libFuzzer target in fuzz/ (clang, ASan + UBSan), side by side for FUZZ_SECONDS, seeded from the test data
# Usage: scripts/run_sanitizers.sh [asan] [tsan] [fuzz]   (no argument: all three)
# Environment: FUZZ_SECONDS (default 25), JOBS (parallel compile jobs, default 2), SKIP_DEPS=1 (do not
# run scripts/install_deps.sh first).
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZ_SECONDS=${FUZZ_SECONDS:-25}
JOBS=${JOBS:-2}
STAGES=("$@")
[ ${#STAGES[@]} -gt 0 ] || STAGES=(asan tsan fuzz)
[ "${SKIP_DEPS:-0}" = 1 ] || bash scripts/install_deps.sh

# Sanitizer builds: optimised a little (the tests run at a usable speed), line tables only (reports name
# file:line, links stay fast), assertions on.
SANITIZER_BUILD=(-G Ninja -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1" -DTRAINCHECK_WERROR=ON)
# A finding stops the process with a non-zero status, with a symbolized stack.
export ASAN_OPTIONS=abort_on_error=1:detect_leaks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# use_unaligned: a Value keeps its payload pointer 4-aligned (trace/value.h), so a payload held only by
# an array of Values or a record's shared fields is reachable through a pointer at a 4-mod-8 address;
# the leak checker scans only 8-aligned words by default and would report such payloads as leaked.
export LSAN_OPTIONS=use_unaligned=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1

timed() {  # timed NAME COMMAND...: runs the command and prints how long it took
  local name=$1 start=$SECONDS
  shift
  "$@"
  echo "== $name: $((SECONDS - start)) s"
}

asan() {
  cmake -S . -B build/asan "${SANITIZER_BUILD[@]}" -DTRAINCHECK_BUILD_TESTS=ON -DTRAINCHECK_SANITIZE=address,undefined >/dev/null
  timed "asan build" cmake --build build/asan -j"$JOBS"
  timed "asan tests" ctest --test-dir build/asan --output-on-failure -j"$JOBS" --timeout 600  # a hang fails, named
}

TSAN_TESTS=(event_stream_test recorder_test record_sink_test)
tsan() {
  cmake -S . -B build/tsan "${SANITIZER_BUILD[@]}" -DTRAINCHECK_BUILD_TESTS=ON -DTRAINCHECK_SANITIZE=thread >/dev/null
  timed "tsan build" cmake --build build/tsan -j"$JOBS" --target "${TSAN_TESTS[@]}"
  local start=$SECONDS t
  for t in "${TSAN_TESTS[@]}"; do build/tsan/tests/cpp/"$t"; done
  echo "== tsan tests: $((SECONDS - start)) s"
}

FUZZERS=(trace_line invariant api_signatures record_frames)
fuzz() {
  cmake -S . -B build/fuzz "${SANITIZER_BUILD[@]}" -DCMAKE_CXX_COMPILER=clang++-14 -DTRAINCHECK_BUILD_FUZZERS=ON \
    -DTRAINCHECK_SANITIZE=address,undefined >/dev/null
  timed "fuzz build" cmake --build build/fuzz -j"$JOBS" --target "${FUZZERS[@]/%/_fuzzer}"
  python3 fuzz/gather_seeds.py build/fuzz/seeds
  mkdir -p build/fuzz/artifacts
  # The targets run side by side, one process each (they are single-threaded): the stage takes
  # FUZZ_SECONDS, not four times that. Each one's output goes to build/fuzz/<target>.log, printed after.
  local f pids=() failed=0
  for f in "${FUZZERS[@]}"; do
    # The first folder collects what the run finds (kept between runs), the second holds the seeds; a
    # finding is written to build/fuzz/artifacts/ and ends the run with a non-zero status.
    mkdir -p build/fuzz/corpus/"$f"
    build/fuzz/fuzz/"$f"_fuzzer -max_total_time="$FUZZ_SECONDS" -timeout=10 -max_len=4096 \
      -dict=fuzz/json.dict -print_final_stats=1 -artifact_prefix=build/fuzz/artifacts/"$f"- \
      build/fuzz/corpus/"$f" build/fuzz/seeds/"$f" >build/fuzz/"$f".log 2>&1 &
    pids+=($!)
  done
  local i
  for i in "${!FUZZERS[@]}"; do
    f=${FUZZERS[$i]}
    if wait "${pids[$i]}"; then
      echo "== fuzz $f: no finding"
      grep -E "^(stat::number_of_executed_units|Done )" build/fuzz/"$f".log || true
    else
      echo "== fuzz $f: FAILED (build/fuzz/$f.log; the input is in build/fuzz/artifacts/)"
      tail -n 80 build/fuzz/"$f".log  # the sanitizer's report and the artifact's name
      failed=1
    fi
  done
  return "$failed"
}

for stage in "${STAGES[@]}"; do
  case $stage in
    asan | tsan | fuzz) timed "$stage" "$stage" ;;
    *) echo "unknown stage '$stage' (asan, tsan, fuzz)" >&2; exit 2 ;;
  esac
done
