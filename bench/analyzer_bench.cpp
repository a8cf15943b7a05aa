// Analyzer benchmark: reading, inference and checking on synthetic trace folders of growing size
// (10, 100, 1000 iterations of an MLP-like loop; cpp/testing/synthetic_trace.h).
//
// Baseline vs candidate, measured in the same run: the baseline is the bare cost of getting the bytes
// through simdjson-equivalent work we cannot avoid (reading the files into memory); the candidate is
// the full reader (parse + flatten + validate + index). Their ratio says what our record model costs on
// top of I/O. Inference and check wall times are printed per size with their growth factor.
//
// Usage: analyzer_bench [max_iterations=1000] [params=16] [check_rounds=5]
// Check times are the best of check_rounds runs: at 1000 iterations a check takes about 20 ms, where one
// run's noise on a shared machine is as large as the differences worth seeing.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "check/checker.h"
#include "common/parallel.h"
#include "infer/engine.h"
#include "relations/registry.h"
#include "testing/synthetic_trace.h"
#include "trace/json_parse.h"
#include "trace/trace_store.h"

namespace fs = std::filesystem;
using namespace traincheck;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

template <typename F>
double best_of(int runs, F&& f) {
  double best = 1e100;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, seconds_since(t0));
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const int max_iterations = argc > 1 ? std::atoi(argv[1]) : 1000;
  const int params = argc > 2 ? std::atoi(argv[2]) : 16;
  const int check_rounds = argc > 3 ? std::max(1, std::atoi(argv[3])) : 5;
  const fs::path root = fs::temp_directory_path() / "tc_analyzer_bench";
  fs::remove_all(root);
  std::printf("analyzer benchmark: synthetic MLP-like traces, %d tracked parameters, %zu threads\n", params, default_thread_count());
  std::printf("%8s %9s %9s | %10s %10s %7s | %9s %9s %9s | %9s\n", "iters", "records", "MB", "io MB/s", "read MB/s", "ratio",
              "read s", "infer s", "check s", "invariants");
  double prev_infer = 0, prev_check = 0;
  for (int iters = 10; iters <= max_iterations; iters *= 10) {
    SyntheticTraceSpec spec;
    spec.iterations = iters;
    spec.params = params;
    const fs::path a = root / ("run_a_" + std::to_string(iters));
    const fs::path b = root / ("run_b_" + std::to_string(iters));
    const fs::path bad = root / ("run_bad_" + std::to_string(iters));
    uint64_t bytes = write_synthetic_trace(a.string(), spec);
    spec.process_id += 1;
    write_synthetic_trace(b.string(), spec);
    spec.skip_foreach_add_at = iters / 2;
    write_synthetic_trace(bad.string(), spec);
    const double mb = static_cast<double>(bytes) / 1e6;

    // Baseline: the files' bytes into memory.
    const auto files = list_trace_files(a.string());
    const double io = best_of(3, [&] {
      std::string buf, err;
      size_t total = 0;
      for (const auto& f : files) {
        read_file(f, buf, err);
        total += buf.size();
      }
      if (total != bytes) std::abort();
    });
    size_t records = 0;
    const double read = best_of(3, [&] { records = TraceStore::load_folder(a.string()).records().size(); });

    TraceStore ta = TraceStore::load_folder(a.string());
    TraceStore tb = TraceStore::load_folder(b.string());
    TraceStore tbad = TraceStore::load_folder(bad.string());
    InferResult inferred;
    const double infer = best_of(1, [&] { inferred = infer_invariants({&ta, &tb}, implemented_relations(), InferOptions{}); });
    size_t failed = 0;
    const double check = best_of(check_rounds, [&] { failed = check_trace(tbad, inferred.invariants, CheckOptions{}).count_failed(); });
    if (failed == 0) std::fprintf(stderr, "warning: the injected bug was not found at %d iterations\n", iters);

    std::printf("%8d %9zu %9.2f | %10.0f %10.0f %6.1fx | %9.4f %9.4f %9.4f | %9zu", iters, records, mb, mb / io, mb / read, read / io,
                read, infer, check, inferred.invariants.size());
    if (prev_infer > 0) std::printf("   (x10 iterations: infer x%.1f, check x%.1f)", infer / prev_infer, check / prev_check);
    std::printf("\n");
    prev_infer = infer;
    prev_check = check;
  }
  fs::remove_all(root);
  return 0;
}
