// Memory and throughput of the native analyzers on synthetic traces growing 10x (docs/README.md §Budgets:
// peak RSS at most the trace's size on disk, readers at 300 MB/s or more).
//
// Each command runs as a child process (fork + exec); its peak RSS is wait4's ru_maxrss and its speed
// the trace's size over its wall time. Rows:
//   io             the files' bytes read into memory, nothing else (a forked child: the floor for MB/s);
//   reader         trace_read TRACE: read_trace_files alone (records, no indexes);
//   read+index     traincheck-check -f TRACE -i EMPTY: the reader and the trace store's indexes;
//   check          traincheck-check -f TRACE -i INV (invariants inferred from a small trace);
//   infer          traincheck-infer -f TRACE;
//   online backlog traincheck-onlinecheck started on the finished trace (the idle wait that ends it is
//                  subtracted from its time).
// With --baseline-bin DIR (a folder holding another build's traincheck-* and trace_read executables,
// e.g. copied before a change), every command row is measured with both builds in the same run, the two
// one after the other per row, and their ratio printed (RSS: candidate / baseline; speed: baseline time /
// candidate time). A baseline without trace_read (built before it existed) skips that row's baseline.
//
// With --keep, the work folder (traces, invariants, logs) is left for profiling one command by hand.
//
// Usage: memory_bench [--lines 100000,1000000] [--bin DIR] [--baseline-bin DIR] [--work DIR] [--skip-infer] [--keep]
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "testing/synthetic_trace.h"
#include "trace/json_parse.h"
#include "trace/trace_reader.h"

namespace fs = std::filesystem;
using namespace traincheck;

namespace {

struct Run {
  double seconds = 0;
  double rss_mb = 0;  // peak resident set, MiB
  int status = 0;
};

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Run wait_child(pid_t pid, double t0) {
  Run run;
  int status = 0;
  rusage usage{};
  if (wait4(pid, &status, 0, &usage) < 0) std::perror("wait4");
  run.seconds = now_seconds() - t0;
  run.rss_mb = static_cast<double>(usage.ru_maxrss) / 1024.0;  // KiB on Linux
  run.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return run;
}

// Runs `argv` with stdout and stderr sent to `log`.
Run run_command(const std::vector<std::string>& argv, const fs::path& log) {
  const double t0 = now_seconds();
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  Run run = wait_child(pid, t0);
  if (run.status != 0) std::fprintf(stderr, "warning: %s exited with %d (log: %s)\n", argv[0].c_str(), run.status, log.c_str());
  return run;
}

// Runs `body` in a forked child, so its peak RSS is its own.
template <typename F>
Run run_forked(F&& body) {
  const double t0 = now_seconds();
  const pid_t pid = fork();
  if (pid == 0) _exit(body() ? 0 : 1);
  return wait_child(pid, t0);
}

std::vector<long> parse_sizes(const std::string& s) {
  std::vector<long> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(std::atol(item.c_str()));
  return out;
}

size_t count_lines(const fs::path& folder) {
  size_t n = 0;
  for (const std::string& f : list_trace_files(folder.string())) {
    std::ifstream in(f, std::ios::binary);
    n += static_cast<size_t>(std::count(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>(), '\n'));
  }
  return n;
}

uint64_t folder_bytes(const fs::path& folder) {
  uint64_t n = 0;
  for (const std::string& f : list_trace_files(folder.string())) n += fs::file_size(f);
  return n;
}

void print_row(const char* what, const char* build, const Run& r, double mb_on_disk, double idle_s = 0) {
  const double secs = std::max(1e-9, r.seconds - idle_s);
  std::printf("  %-15s %-9s %9.1f %9.2f %9.3f %9.0f%s\n", what, build, r.rss_mb, r.rss_mb / mb_on_disk, secs,
              mb_on_disk / secs, r.status ? "   (failed)" : "");
}

void print_ratio(const char* what, const Run& base, const Run& cand, double idle_s = 0) {
  std::printf("  %-15s %-9s %9s %8.2fx %9s %8.2fx  (candidate / baseline)\n", what, "ratio", "", cand.rss_mb / base.rss_mb, "",
              (base.seconds - idle_s) / std::max(1e-9, cand.seconds - idle_s));
}

}  // namespace

int main(int argc, char** argv) {
  std::string sizes_arg = "100000,1000000";
  fs::path bin = TC_CLI_DIR;
  std::optional<fs::path> baseline_bin;
  fs::path work = fs::temp_directory_path() / "tc_memory_bench";
  bool skip_infer = false;
  bool keep = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--lines") sizes_arg = next();
    else if (a == "--bin") bin = next();
    else if (a == "--baseline-bin") baseline_bin = fs::path(next());
    else if (a == "--work") work = next();
    else if (a == "--skip-infer") skip_infer = true;
    else if (a == "--keep") keep = true;
    else {
      std::fprintf(stderr, "usage: memory_bench [--lines N,M] [--bin DIR] [--baseline-bin DIR] [--work DIR] [--skip-infer] [--keep]\n");
      return 2;
    }
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // rows appear as they are measured
  fs::remove_all(work);
  fs::create_directories(work);

  // Invariants for check and onlinecheck: inferred once from a small good trace.
  SyntheticTraceSpec spec;
  spec.params = 16;
  spec.iterations = 100;
  const fs::path small = work / "small";
  write_synthetic_trace(small.string(), spec);
  const fs::path invariants = work / "invariants.json";
  const fs::path no_invariants = work / "no_invariants.json";  // read+index: checks nothing
  std::ofstream(no_invariants).flush();
  if (run_command({(bin / "traincheck-infer").string(), "-f", small.string(), "-o", invariants.string()}, work / "infer_small.log").status)
    return 1;

  struct Build {
    const char* name;
    fs::path dir;
  };
  std::vector<Build> builds;
  if (baseline_bin) builds.push_back({"baseline", *baseline_bin});
  builds.push_back({"candidate", bin});

  std::printf("memory benchmark: synthetic MLP-like traces (16 parameters); targets: RSS/size <= 1.00, >= 300 MB/s\n");
  for (long lines_wanted : parse_sizes(sizes_arg)) {
    // About 70 lines per iteration with 16 parameters; the exact count is printed.
    spec.iterations = static_cast<int>(std::max(1L, lines_wanted / 70));
    const fs::path trace = work / ("trace_" + std::to_string(lines_wanted));
    write_synthetic_trace(trace.string(), spec);
    const double mb = static_cast<double>(folder_bytes(trace)) / (1024.0 * 1024.0);
    std::printf("\n%zu lines, %.1f MiB on disk\n", count_lines(trace), mb);
    std::printf("  %-15s %-9s %9s %9s %9s %9s\n", "what", "build", "RSS MiB", "RSS/size", "seconds", "MB/s");

    const std::vector<std::string> files = list_trace_files(trace.string());
    const Run io = run_forked([&] {
      std::string buf, err;
      for (const std::string& f : files)
        if (!read_file(f, buf, err)) return false;
      return true;
    });
    print_row("io", "-", io, mb);

    struct Command {
      const char* name;
      std::vector<std::string> args;  // after the executable
      const char* exe;
      double idle_s;
    };
    const fs::path out = work / "out";
    std::vector<Command> commands = {
        {"reader", {trace.string()}, "trace_read", 0},
        {"read+index", {"-f", trace.string(), "-i", no_invariants.string(), "-o", out.string(), "--no-html-report"}, "traincheck-check", 0},
        {"check", {"-f", trace.string(), "-i", invariants.string(), "-o", out.string(), "--no-html-report"}, "traincheck-check", 0},
        {"online backlog",
         {"-f", trace.string(), "-i", invariants.string(), "-o", out.string(), "--no-html-report", "--poll-interval-ms", "20",
          "--exit-when-idle", "0.5"},
         "traincheck-onlinecheck",
         0.5},
    };
    if (!skip_infer) commands.push_back({"infer", {"-f", trace.string(), "-o", (out / "inferred.json").string()}, "traincheck-infer", 0});
    for (const Command& c : commands) {
      std::vector<Run> runs;
      for (const Build& b : builds) {
        if (!fs::exists(b.dir / c.exe)) {
          std::printf("  %-15s %-9s (no %s in %s)\n", c.name, b.name, c.exe, b.dir.c_str());
          continue;
        }
        fs::remove_all(out);
        fs::create_directories(out);
        std::vector<std::string> argv = {(b.dir / c.exe).string()};
        argv.insert(argv.end(), c.args.begin(), c.args.end());
        runs.push_back(run_command(argv, work / (std::string(c.exe) + "_" + b.name + ".log")));
        print_row(c.name, b.name, runs.back(), mb, c.idle_s);
      }
      if (runs.size() == 2) print_ratio(c.name, runs[0], runs[1], c.idle_s);
    }
    if (!keep) fs::remove_all(trace);
  }
  if (!keep) fs::remove_all(work);
  return 0;
}
