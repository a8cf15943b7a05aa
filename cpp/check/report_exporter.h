// External reporting (docs/formats.md §External reporting): --report-wandb and --report-mlflow hand the
// checker's output folder to a Python child, `python -m traincheck.reporting.export`, which logs it with
// the real `wandb` / `mlflow` packages. The checker itself never links or embeds Python: the child reads
// only the files the checker wrote (failed.log, violations_summary.json, report.html, invariants.json).
//
// Interpreter: $TRAINCHECK_PYTHON, else python3 / python beside this executable (the venv that installed
// it), else python3 on PATH. A reporting failure (no interpreter, a package missing, a backend error) is a
// warning: it never changes the check's exit status.
#pragma once

#include <iosfwd>
#include <string>
#include <sys/types.h>
#include <vector>

#include "common/cli_args.h"

namespace traincheck {

class ReportExporter {
 public:
  // Reads --report-wandb, --report-mlflow and their --wandb-* / --mlflow-* options; enabled() is false
  // when neither flag is given. `mode` is "offline" or "online".
  ReportExporter(const ArgParser& args, std::string prog, std::string mode, std::string output_dir, std::ostream& err);
  ~ReportExporter();
  ReportExporter(const ReportExporter&) = delete;
  ReportExporter& operator=(const ReportExporter&) = delete;

  bool enabled() const { return !backends_.empty(); }

  // traincheck-onlinecheck: starts the child in follow mode; it tails failed.log and logs per-step
  // violation counts while the check runs. It finalises when its stdin closes: finish(), or this process
  // exiting in any way.
  void start_follow();
  // Runs the child once on the finished folder (or, after start_follow, tells it to finalise) and waits.
  void finish();

 private:
  bool spawn(bool follow);
  void warn_on_status(int status);

  std::string prog_, mode_, output_dir_;
  std::vector<std::string> backends_;  // "wandb", "mlflow"
  std::vector<std::string> options_;   // the --wandb-* / --mlflow-* options, passed through
  std::ostream& err_;
  pid_t child_ = -1;
  int stdin_fd_ = -1;  // write end of the follow child's stdin
};

// The interpreter that runs the exporter (see the header comment); "" when none is found.
std::string find_report_python();

}  // namespace traincheck
