#include "check/check_args.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <ostream>
#include <vector>

#include "check/report/report_exporter.h"
#include "common/console_text.h"
#include "common/env_settings.h"

namespace traincheck {

void add_check_flags(ArgParser& args, const std::string& output_prefix) {
  args.list({"-t", "--traces"}, "traces", "trace files, combined into one trace", "FILE");
  args.list({"-f", "--trace-folders"}, "trace_folders", "trace folders, each one trace", "DIR");
  args.list({"-i", "--invariants"}, "invariants", "invariant files (JSON lines)", "FILE");
  args.option({"-o", "--output-dir"}, "output_dir", "results folder (default " + output_prefix + "_<time>_relation_first_<bool>)", "", "DIR");
  args.flag({"--no-html-report"}, "no_html_report", "do not write report.html");
  args.flag({"--check-relation-first"}, "check_relation_first", "evaluate the relation before the precondition");
  args.flag({"-d", "--debug"}, "debug", "verbose progress");
  // Logged by a Python child (check/report/report_exporter.h) with the `report` extra's wandb / mlflow.
  args.flag({"--report-wandb"}, "--report-wandb", "log the results to Weights & Biases (pip install traincheck[report])");
  args.flag({"--report-mlflow"}, "--report-mlflow", "log the results to MLflow (pip install traincheck[report])");
  args.option({"--wandb-project"}, "--wandb-project", "W&B project", "", "NAME");
  args.option({"--wandb-entity"}, "--wandb-entity", "W&B entity (team or user)", "", "NAME");
  args.option({"--wandb-run-name"}, "--wandb-run-name", "W&B run name", "", "NAME");
  args.option({"--wandb-group"}, "--wandb-group", "W&B run group", "", "NAME");
  args.option({"--wandb-run-id"}, "--wandb-run-id", "W&B run id to resume (log into an existing run)", "", "ID");
  args.list({"--wandb-tags"}, "--wandb-tags", "W&B run tags", "TAG");
  args.option({"--mlflow-experiment"}, "--mlflow-experiment", "MLflow experiment name", "", "NAME");
  args.option({"--mlflow-run-name"}, "--mlflow-run-name", "MLflow run name", "", "NAME");
}

std::optional<int> parse_check_flags(ArgParser& args, const std::string& prog, int argc, const char* const* argv, std::ostream& err) {
  std::string error;
  if (!args.parse(argc, argv, error)) {
    err << args.usage() << prog << ": error: " << error << "\n";
    return 2;
  }
  if (args.help_requested()) {
    err << args.usage();
    return 0;
  }
  if (!args.has("invariants")) {
    err << args.usage() << prog << ": error: the following arguments are required: -i/--invariants\n";
    return 2;
  }
  if (!args.has("traces") && !args.has("trace_folders")) {
    err << args.usage() << prog << ": error: one of -t/--traces or -f/--trace-folders is required\n";
    return 2;
  }
  // Settings from the environment: a bad value stops here, before any work, in one line.
  if (const char* text = std::getenv(kExportTimeoutSetting.name))
    if (auto bad = env_number_error(kExportTimeoutSetting, text)) {
      err << prog << ": error: " << *bad << "\n";
      return 2;
    }
  return std::nullopt;
}

std::string existing_results_note(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::string> names;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) names.push_back(it->path().filename().string());
  if (names.empty()) return {};
  std::sort(names.begin(), names.end());
  constexpr size_t kShown = 4;
  std::string shown;
  for (size_t i = 0; i < std::min(names.size(), kShown); ++i) shown += (i ? ", " : "") + console_text(names[i], 80);
  if (names.size() > kShown) shown += " and " + std::to_string(names.size() - kShown) + " more";
  return "the results folder " + console_text(dir) + " already holds files (" + shown +
         "): results of the same name replace them, the others stay";
}

}  // namespace traincheck
