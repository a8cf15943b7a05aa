#include "check/check_command.h"

#include <chrono>
#include <cstdint>
#include <ctime>
#include <filesystem>
#include <ostream>
#include <set>

#include "check/check_args.h"
#include "check/checker.h"
#include "check/report/report_exporter.h"
#include "check/report/report_html.h"
#include "check/result_writer.h"
#include "check/violation_summary.h"
#include "common/console_text.h"
#include "common/invariant_source.h"
#include "common/output_file.h"
#include "invariant/version_gate.h"
#include "relations/registry.h"
#include "trace/lost_records.h"

namespace traincheck {

namespace fs = std::filesystem;

namespace {

// The console's violation summary of one trace: what broke, from which step to which, how often.
void print_violation_summary(std::ostream& err, const std::string& trace, const std::vector<ViolationSummaryRow>& rows,
                             size_t max_rows) {
  if (rows.empty()) return;
  const std::optional<int64_t> first = first_violation_step(rows);
  err << "[check] " << console_text(trace) << ": " << rows.size() << " invariants violated"
      << (first ? ", the first at step " + std::to_string(*first) : std::string()) << ":\n"
      << format_violation_summary(rows, max_rows);
}

}  // namespace

int run_check_command(int argc, const char* const* argv, std::ostream& err) {
  ArgParser args("traincheck-check", "Check traces against invariants.");
  add_check_flags(args, "traincheck_checker_results");
  args.option({"-b", "--backend"}, "backend", "accepted for compatibility; ignored", "pandas", "NAME");
  args.option({"-j", "--num-workers", "--threads"}, "threads", "parallel workers (threads; 0: one per core)", "0", "N");
  if (auto status = parse_check_flags(args, "traincheck-check", argc, argv, err)) return *status;
  // All rows with -d; else the earliest ones (violations_summary.json has them all).
  const size_t summary_rows = args.flag_set("debug") ? SIZE_MAX : 20;
  CheckOptions options;
  options.check_relation_first = args.flag_set("check_relation_first");
  size_t threads = 0;
  try {
    threads = std::stoul(args.get("threads"));
  } catch (const std::exception&) {
    err << "traincheck-check: error: -j/--num-workers takes a non-negative integer\n";
    return 2;
  }
  std::string out_dir = args.get("output_dir");
  if (out_dir.empty()) {
    const std::time_t now = std::time(nullptr);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y-%m-%d_%H-%M-%S", std::localtime(&now));
    out_dir = std::string("traincheck_checker_results_") + stamp + "_relation_first_" +
              (options.check_relation_first ? "True" : "False");
  }

  try {
    // Invariants from every -i file, duplicates (same relation and params) kept once. The original
    // copies only the last file to <out>/invariants.json (docs/differences.md §Checking); we write them all.
    std::vector<Invariant> invariants =
        read_invariant_files(resolve_invariant_sources(args.get_list("invariants")), relation_names());
    if (const std::string note = existing_results_note(out_dir); !note.empty()) err << "[check] warning: " << note << "\n";
    fs::create_directories(out_dir);
    write_invariant_file((fs::path(out_dir) / "invariants.json").string(), invariants);

    ReadOptions read;
    read.warnings = &err;
    read.threads = threads;
    std::vector<std::pair<bool, std::string>> sources;  // (is folder, path); -t files form one trace
    for (const std::string& f : args.get_list("trace_folders")) sources.emplace_back(true, f);
    std::vector<TraceCheckReport> reports;
    std::vector<std::unique_ptr<TraceStore>> traces;
    std::set<std::string> names;
    // `folder`: where the run's env_dump.txt is; its library versions decide which invariants it checks.
    auto run_one = [&](std::unique_ptr<TraceStore> trace, const fs::path& folder) {
      const auto t0 = std::chrono::steady_clock::now();
      const VersionGate gate = gate_by_version(invariants, read_env_dump_versions((folder / "env_dump.txt").string()));
      std::vector<Invariant> checked_here;
      if (gate.count > 0)
        for (size_t i = 0; i < invariants.size(); ++i)
          if (!gate.skipped[i]) checked_here.push_back(invariants[i]);
      TraceCheckReport report = check_trace(*trace, gate.count > 0 ? checked_here : invariants, options, threads);
      // The results of a trace go to <out>/<name>: a name that is not one plain folder name (`..`, a
      // path) would put them elsewhere.
      const std::string base = report.name.empty() || report.name == "." || report.name == ".." ||
                                       report.name.find('/') != std::string::npos
                                   ? std::string("trace")
                                   : report.name;
      std::string name = base;
      for (int k = 1; names.count(name); ++k) name = base + "_" + std::to_string(k);
      names.insert(name);
      report.name = name;
      write_trace_results((fs::path(out_dir) / name).string(), report);
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      err << "[check] " << console_text(name) << ": " << report.count_failed() << " failed, " << report.count_passed() << " passed, "
          << report.count_not_triggered() << " not triggered (" << secs << " s)\n";
      if (!gate.note.empty()) err << "[check] " << console_text(name) << ": " << gate.note << "\n";
      if (trace->records_lost())
        err << "[check] " << console_text(name) << ": " << incomplete_trace_line(trace->records_lost(), trace->files_with_lost_records()) << "\n";
      print_violation_summary(err, name, violation_summary_rows(report), summary_rows);
      // With the trace's api_signatures.json read, the APIs still without one are builtins whose signature
      // no collector records (named by position at inference too): said with -d only.
      if (const std::vector<std::string> missing = trace->signatures().missing(); !missing.empty()) {
        std::error_code ec;
        if (!fs::exists(folder / "api_signatures.json", ec))
          err << "warning: trace '" << console_text(name) << "': " << missing_signatures_message(missing) << "\n";
        else if (args.flag_set("debug"))
          err << "[check] " << console_text(name) << ": " << builtin_signatures_message(missing) << "\n";
      }
      reports.push_back(std::move(report));
      traces.push_back(std::move(trace));
    };
    if (args.has("traces")) {
      const std::vector<std::string> files = args.get_list("traces");
      run_one(std::make_unique<TraceStore>(TraceStore::load_files(files, read)),
              files.empty() ? fs::path() : fs::path(files[0]).parent_path());
    }
    for (const auto& [is_folder, path] : sources) {
      err << "[check] reading " << console_text(path) << "\n";
      run_one(std::make_unique<TraceStore>(TraceStore::load_folder(path, read)), fs::path(path));
    }
    if (!args.flag_set("no_html_report")) {
      write_output_file((fs::path(out_dir) / "report.html").string(), render_report_html(reports, out_dir));
    }
    err << "[check] results in " << out_dir << "\n";
    // Last, on the finished folder; a reporting failure is a warning and leaves the status 0.
    ReportExporter(args, "traincheck-check", "offline", out_dir, err).finish();
  } catch (const std::exception& e) {
    err << "traincheck-check: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace traincheck
