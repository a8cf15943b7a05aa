// External reporting (docs/differences.md §Checking): --report-wandb and --report-mlflow hand the
// checker's output folder to a Python child, `python -m traincheck.reporting.export`, which logs it with
// the real `wandb` / `mlflow` packages. The checker itself never links or embeds Python: the child reads
// only what the checker wrote (violations_summary.json, report.html, invariants.json, and, following a live
// check, the per-step counts on its stdin).
//
// Interpreter: $TRAINCHECK_PYTHON, else python3 / python beside this executable (the venv that installed
// it), else python3 on PATH. It runs isolated (`python -I`: neither the working directory nor PYTHONPATH
// nor the user's site folder on sys.path, so a `wandb/` folder where the check runs is never imported) in
// a process group of its own, and gets TRAINCHECK_EXPORT_TIMEOUT_S (default 60) to finish once the check
// is done: a backend that hangs (an unreachable MLFLOW_TRACKING_URI) is stopped, never waited for. A
// reporting failure (no interpreter, a package missing, a backend error, the timeout) is a warning: it
// never changes the check's exit status.
#pragma once

#include <iosfwd>
#include <optional>
#include <cstdint>
#include <string>
#include <sys/types.h>
#include <utility>
#include <vector>

#include "common/cli_args.h"
#include "common/env_settings.h"

namespace traincheck {

// Seconds the exporter gets to finish after the check is done (validated by parse_check_flags).
inline constexpr EnvNumberSetting kExportTimeoutSetting{
    "TRAINCHECK_EXPORT_TIMEOUT_S", 0.1, 86400, 60, "seconds the W&B / MLflow export may take after the check"};

class ReportExporter {
 public:
  // Reads --report-wandb, --report-mlflow and their --wandb-* / --mlflow-* options; enabled() is false
  // when neither flag is given. `mode` is "offline" or "online".
  ReportExporter(const ArgParser& args, std::string prog, std::string mode, std::string output_dir, std::ostream& err);
  ~ReportExporter();
  ReportExporter(const ReportExporter&) = delete;
  ReportExporter& operator=(const ReportExporter&) = delete;

  bool enabled() const { return !backends_.empty(); }

  // traincheck-onlinecheck: starts the child in follow mode; it logs the per-step violation counts this
  // process hands it (log_step_counts) while the check runs, and finalises when its stdin closes: finish(),
  // or this process exiting in any way.
  void start_follow();
  // Hands the follow child final per-step counts (FinalStepCounts), one "<step> <invariants>" line each on
  // its stdin. A child that has gone (its pipe closed) is given nothing more; the check goes on.
  void log_step_counts(const std::vector<std::pair<int64_t, int64_t>>& counts);
  // Runs the child once on the finished folder (or, after start_follow, tells it to finalise) and waits.
  void finish();

 private:
  bool spawn(bool follow);
  void warn_on_status(int status);
  // Waits for the child until the timeout, then stops its process group; the child's wait status, or
  // nullopt when it had to be stopped.
  std::optional<int> wait_or_stop();

  std::string prog_, mode_, output_dir_;
  std::vector<std::string> backends_;  // "wandb", "mlflow"
  std::vector<std::string> options_;   // the --wandb-* / --mlflow-* options, passed through
  std::ostream& err_;
  double timeout_s_;
  pid_t child_ = -1;
  int stdin_fd_ = -1;  // write end of the follow child's stdin
};

// The interpreter that runs the exporter (see the header comment); "" when none is found.
std::string find_report_python();

}  // namespace traincheck
