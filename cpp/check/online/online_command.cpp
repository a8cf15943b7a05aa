#include "check/online/online_command.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <filesystem>
#include <limits>
#include <optional>
#include <ostream>
#include <set>
#include <sys/stat.h>
#include <unistd.h>
#include <thread>

#include "check/check_args.h"
#include "check/online/online_checker.h"
#include "check/online/trace_tailer.h"
#include "check/report/final_step_counts.h"
#include "check/report/report_exporter.h"
#include "check/result_writer.h"
#include "common/console_text.h"
#include "common/fd_write.h"
#include "common/invariant_source.h"
#include "common/output_file.h"
#include "trace/lost_records.h"

namespace traincheck {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

std::string timestamp() {
  const std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%d_%H-%M-%S", std::localtime(&now));
  return stamp;
}

// Messages go to stderr and to the log file (the original's log: docs/formats.md §traincheck-onlinecheck).
class Log {
 public:
  // A log that cannot be opened (a link planted under its name is refused, never followed) leaves the
  // messages on stderr, with one line saying so.
  Log(std::ostream& err, const std::string& path) : err_(err), fd_(open_output_fd(path, OutputMode::Append)) {
    if (fd_ < 0) err_ << "traincheck-onlinecheck: warning: no log file: " << output_open_error(path, errno) << "\n";
  }
  ~Log() {
    if (fd_ >= 0) ::close(fd_);
  }
  Log(const Log&) = delete;
  Log& operator=(const Log&) = delete;
  void line(const std::string& text) {
    err_ << text << "\n";
    if (fd_ >= 0) write_all(fd_, text + "\n");
  }

 private:
  std::ostream& err_;
  int fd_ = -1;
};

// --exit-on-idle without a value: long enough for a checkpoint or an evaluation pass, when a training
// run writes no trace lines, not to end the check.
constexpr const char* kBareIdleSeconds = "60";

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

size_t poll_into_checker(TraceTailer& tailer, OnlineChecker& checker, std::optional<int64_t>& horizon,
                         const std::function<void(const std::string&)>& warn, const std::function<void()>& before_checking) {
  const size_t bytes = tailer.poll([&](const std::string& path, std::string_view lines) { checker.add_lines(path, lines); }, warn,
                                   [&](const std::string& path) {
                                     if (!horizon) return false;
                                     const std::optional<int64_t> t = checker.last_time(path);
                                     return t && *t > *horizon;
                                   });
  if (before_checking) before_checking();
  horizon.reset();
  for (const std::string& path : tailer.behind_files()) {
    const std::optional<int64_t> t = checker.last_time(path);
    const int64_t bound = t ? *t : std::numeric_limits<int64_t>::min();  // nothing delivered yet: hold everything
    horizon = horizon ? std::min(*horizon, bound) : bound;
  }
  checker.end_batch(horizon);
  return bytes;
}

namespace {

// The loop's settings, from the command line.
struct OnlineRun {
  double report_interval = 10.0;  // seconds between report refreshes
  double idle_limit = 0.0;        // --exit-on-idle seconds; 0: run until stopped
  std::string idle_flag;          // its text, for the message
  long poll_ms = 200;
  bool verbose = false;           // -v/--verbose or -d/--debug: each new violation and what each poll read
  bool html = true;
  std::string report_path;
};

// A folder may appear later (the checker can start before the run); anything else is a mistake (false).
bool check_trace_folders(const std::vector<std::string>& folders, Log& log, std::ostream& err) {
  for (const std::string& f : folders) {
    std::error_code ec;
    const fs::file_status status = fs::status(f, ec);
    if (fs::exists(status) && !fs::is_directory(status)) {
      err << "traincheck-onlinecheck: error: " << f << ": -f takes trace folders, and this is not a folder\n";
      return false;
    }
    if (!fs::exists(status)) log.line("warning: " + f + " does not exist yet; waiting for it to appear");
  }
  return true;
}

// Signatures of each folder. A collect run writes api_signatures.json before its script runs, and each
// process of the run merges its own in (an atomic rename): the file is read again whenever it was
// replaced, so a check that started before the run, or while ranks were still starting, gets them all.
class PendingSignatures {
 public:
  explicit PendingSignatures(const std::vector<std::string>& folders) {
    for (const std::string& f : folders) files_.push_back({(fs::path(f) / "api_signatures.json").string(), {}});
  }
  // Calls add(ApiSignatures) for each file that appeared or was replaced since the last call. A file
  // caught half-written by a writer that does not rename is tried again at the next call.
  // Whether every folder's file has been read: then an API still without a signature is one whose
  // signature no collector can record (a C builtin such as `torch.clamp`), not one waiting for its file.
  bool all_loaded() const {
    return std::all_of(files_.begin(), files_.end(), [](const Watched& w) { return w.seen.has_value(); });
  }
  template <class Add>
  void load_new(Add&& add) {
    for (Watched& w : files_) {
      struct stat st {};
      if (::stat(w.path.c_str(), &st) != 0) continue;
      const Identity now{static_cast<uint64_t>(st.st_ino), static_cast<uint64_t>(st.st_size),
                         static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
      if (w.seen && *w.seen == now) continue;
      try {
        add(ApiSignatures::load(w.path));
        w.seen = now;
      } catch (const TraceReadError&) {
      }
    }
  }

 private:
  struct Identity {
    uint64_t inode, size;
    int64_t mtime_ns;
    bool operator==(const Identity&) const = default;
  };
  struct Watched {
    std::string path;
    std::optional<Identity> seen;
  };
  std::vector<Watched> files_;
};

// Once per API: the APIs whose arguments the checks had to name by position for want of a signature.
// Said only while some folder's api_signatures.json is still to come (or with -v): once all are read, the
// APIs left are builtins whose signature no collector records, named by position at inference too, and
// a warning on every check would say nothing a user can act on.
class MissingSignatureNote {
 public:
  void print(const ApiSignatures& signatures, bool files_all_read, bool verbose, Log& log) {
    std::vector<std::string> fresh;
    for (std::string& name : signatures.missing())
      if (said_.insert(name).second) fresh.push_back(std::move(name));
    if (fresh.empty()) return;
    if (!files_all_read) log.line("warning: " + missing_signatures_message(fresh));
    else if (verbose) log.line(builtin_signatures_message(fresh));
  }

 private:
  std::set<std::string> said_;
};

// With -v: one line per invariant whose violations grew since the last call, with its latest step.
class NewViolationPrinter {
 public:
  void print(const OnlineChecker& checker, Log& log) {
    const auto& states = checker.states();
    seen_.resize(states.size(), 0);
    for (size_t i = 0; i < states.size(); ++i) {
      const OnlineInvariantState& s = states[i];
      if (s.violations == seen_[i]) continue;
      log.line("violation: " + console_text(s.display_name) + (s.last_step ? " at step " + std::to_string(*s.last_step) : std::string()) + " (" +
               std::to_string(s.violations) + " so far, first at step " + (s.first_step ? std::to_string(*s.first_step) : "-") + ")");
      seen_[i] = s.violations;
    }
  }

 private:
  std::vector<uint64_t> seen_;  // violations already printed, per invariant
};

// Polls and checks until `stop` is set or, with --exit-on-idle, no data came for that long.
// The W&B / MLflow exporter following the check, given each step's count once final (FinalStepCounts); the
// steps still open when the check stops it reads from violations_summary.json.
void hand_final_steps(const OnlineChecker& checker, FinalStepCounts& steps, ReportExporter& exporter, bool end) {
  if (exporter.enabled()) exporter.log_step_counts(steps.take(invariants_per_step(checker.violation_summary()), end));
}

void check_until_stopped(OnlineChecker& checker, TraceTailer& tailer, PendingSignatures& signatures, const OnlineRun& run,
                         Log& log, const std::atomic<bool>& stop, ReportExporter& exporter) {
  FinalStepCounts exported_steps;
  uint64_t exported_violations = 0;
  auto last_data = Clock::now(), last_report = Clock::now() - std::chrono::hours(1);
  uint64_t reported_violations = ~0ull;
  uint64_t reported_bad = 0;
  std::optional<int64_t> horizon;  // set while some file has a backlog (poll_into_checker)
  NewViolationPrinter new_violations;
  MissingSignatureNote missing_signatures;
  for (;;) {
    const bool stopping = stop.load();
    // One poll is one batch: what it read from every file is checked merged by time, with the signatures
    // its processes wrote before their lines.
    const size_t bytes = poll_into_checker(
        tailer, checker, horizon, [&](const std::string& message) { log.line("warning: " + message); },
        [&] { signatures.load_new([&](const ApiSignatures& s) { checker.add_signatures(s); }); });
    missing_signatures.print(checker.signatures(), signatures.all_loaded(), run.verbose, log);
    if (bytes) last_data = Clock::now();
    const OnlineCounts c = checker.counts();
    const auto& errors = checker.recent_errors();
    const size_t fresh = static_cast<size_t>(std::min<uint64_t>(c.bad_lines - reported_bad, errors.size()));
    for (size_t i = errors.size() - fresh; i < errors.size(); ++i) log.line("warning: skipping bad line: " + errors[i]);
    reported_bad = c.bad_lines;
    if (run.verbose && bytes) log.line("[onlinecheck] read " + std::to_string(bytes) + " bytes; " + std::to_string(c.violations) + " violations");
    if (run.verbose && c.violations != reported_violations) new_violations.print(checker, log);
    // Throttled as the original's: at once (at most once a second) when the violations changed, else
    // every --report-interval-seconds.
    const double since = seconds_since(last_report);
    if (run.html && ((c.violations != reported_violations && since >= 1.0) || since >= run.report_interval)) {
      checker.write_report(run.report_path);
      last_report = Clock::now();
      reported_violations = c.violations;
    }
    if (c.violations != exported_violations) {
      hand_final_steps(checker, exported_steps, exporter, false);
      exported_violations = c.violations;
    }
    if (stopping) break;
    if (run.idle_limit > 0 && seconds_since(last_data) >= run.idle_limit) {
      log.line("No trace data for " + run.idle_flag + " s; stopping (--exit-on-idle)");
      break;
    }
    if (!tailer.behind()) std::this_thread::sleep_for(std::chrono::milliseconds(run.poll_ms));
  }
}

// The first three lines verbatim: other tooling matches them (docs/formats.md §traincheck-onlinecheck). Then the
// violation summary: every violated invariant with its first and last step and count, earliest first.
void log_final_summary(const OnlineChecker& checker, Log& log) {
  const OnlineCounts c = checker.counts();
  log.line("Checker stopped");
  if (const std::string note = checker.incomplete_trace_note(); !note.empty()) log.line(note);
  log.line("Total " + std::to_string(c.violations) + " violations found");
  log.line("Total " + std::to_string(c.invariants_violated) + " invariants violated:");
  const std::vector<ViolationSummaryRow> rows = checker.violation_summary();
  if (rows.empty()) return;
  std::string table = format_violation_summary(rows, SIZE_MAX);
  table.pop_back();  // Log::line ends the line
  log.line(table);
}

}  // namespace

int run_online_check_command(int argc, const char* const* argv, std::ostream& err, const std::atomic<bool>& stop) {
  ArgParser args("traincheck-onlinecheck", "Check traces against invariants while they are written.");
  add_check_flags(args, "traincheck_onlinechecker_results");
  args.option({"-j", "--num-workers", "--threads"}, "threads", "accepted for compatibility (one checking thread)", "0", "N");
  args.flag({"-v", "--verbose"}, "verbose", "print each new violation (label, step, count) and what each poll read");
  args.option({"--report-interval-seconds"}, "report_interval", "refresh report.html at least this often", "10.0", "SECONDS");
  args.option({"--poll-interval-ms"}, "poll_ms", "how often the trace files are polled (ours)", "200", "MS");
  // --exit-when-idle: our earlier spelling, kept.
  args.optional_value({"--exit-on-idle", "--exit-when-idle"}, "exit_when_idle",
                      "stop once no trace data arrived for SECONDS (0: run until a signal)", "0", kBareIdleSeconds, "SECONDS");
  if (auto status = parse_check_flags(args, "traincheck-onlinecheck", argc, argv, err)) return *status;
  OnlineRun run;
  try {
    run.report_interval = std::stod(args.get("report_interval"));
    run.idle_limit = std::stod(args.get("exit_when_idle"));
    run.poll_ms = std::stol(args.get("poll_ms"));
  } catch (const std::exception&) {
    err << "traincheck-onlinecheck: error: --report-interval-seconds, --exit-on-idle and --poll-interval-ms take numbers\n";
    return 2;
  }
  if (run.poll_ms <= 0) run.poll_ms = 200;
  run.idle_flag = args.get("exit_when_idle");
  const std::string suffix = std::string("_relation_first_") + (args.flag_set("check_relation_first") ? "True" : "False");
  const std::string stamp = timestamp();
  std::string out_dir = args.get("output_dir");
  if (out_dir.empty()) out_dir = "traincheck_onlinechecker_results_" + stamp + suffix;
  Log log(err, "traincheck_onlinechecker_" + stamp + suffix + ".log");
  run.verbose = args.flag_set("verbose") || args.flag_set("debug");
  run.html = !args.flag_set("no_html_report");
  run.report_path = (fs::path(out_dir) / "report.html").string();

  if (const std::string note = existing_results_note(out_dir); !note.empty()) log.line("warning: " + note);
  try {
    OnlineCheckerOptions options;
    options.output_dir = out_dir;
    const std::vector<std::string> folders = args.get_list("trace_folders");
    if (!check_trace_folders(folders, log, err)) return 2;
    // The run's library versions, from the collector's env_dump.txt (invariants vetted on others are not
    // checked, as in-process).
    if (!folders.empty()) options.library_versions = read_env_dump_versions((fs::path(folders[0]) / "env_dump.txt").string());
    PendingSignatures pending(folders);
    ApiSignatures signatures;
    pending.load_new([&](const ApiSignatures& s) { signatures.merge(s); });
    const std::vector<std::string> invariant_files = resolve_invariant_sources(args.get_list("invariants"));
    OnlineChecker checker(OnlineChecker::load_invariants(invariant_files), std::move(signatures), options);
    // A finished trace's recorder logs say where it lost lines: checked as the offline check places them.
    for (const std::string& folder : folders) {
      const std::vector<std::string> files = list_trace_files(folder);
      for (const LostRecords& loss : read_recorder_losses(folder, files, err))
        checker.expect_loss(loss, loss.placed ? fs::path(files[loss.file]).filename().string() : std::string());
    }
    const OnlineCounts at_start = checker.counts();
    log.line("Checking " + std::to_string(at_start.checked) + " invariants online (" +
             std::to_string(at_start.not_checked - at_start.version_skipped) +
             " not checked: no online check for their relation); results in " + out_dir);
    if (!checker.version_note().empty()) log.line(checker.version_note());

    // Started now, it logs per-step counts while the check runs; finish() makes it log the final
    // summary, tables and report (and its destructor does, should anything below throw).
    ReportExporter exporter(args, "traincheck-onlinecheck", "online", out_dir, err);
    exporter.start_follow();
    TraceTailer tailer(folders, args.get_list("traces"));
    check_until_stopped(checker, tailer, pending, run, log, stop, exporter);
    // Records held back by a horizon when stopped inside a backlog; a recorder's log read at the start
    // means its files had ended, so lines lost at their ends count.
    checker.end_of_sources();
    if (run.html) checker.write_report(run.report_path);
    checker.write_violations_summary();
    log_final_summary(checker, log);
    exporter.finish();
  } catch (const std::exception& e) {
    log.line("traincheck-onlinecheck: error: " + std::string(e.what()));
    return 1;
  }
  return 0;
}

}  // namespace traincheck
