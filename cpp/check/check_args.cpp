#include "check/check_args.h"

#include <ostream>

namespace traincheck {

void add_check_flags(ArgParser& args, const std::string& output_prefix) {
  args.list({"-t", "--traces"}, "traces", "trace files, combined into one trace", "FILE");
  args.list({"-f", "--trace-folders"}, "trace_folders", "trace folders, each one trace", "DIR");
  args.list({"-i", "--invariants"}, "invariants", "invariant files (JSON lines)", "FILE");
  args.option({"-o", "--output-dir"}, "output_dir", "results folder (default " + output_prefix + "_<time>_relation_first_<bool>)", "", "DIR");
  args.flag({"--no-html-report"}, "no_html_report", "do not write report.html");
  args.flag({"--check-relation-first"}, "check_relation_first", "evaluate the relation before the precondition");
  args.flag({"-d", "--debug"}, "debug", "verbose progress");
  for (const char* f : {"--report-wandb", "--report-mlflow"}) args.flag({f}, f, "not supported; ignored");
  for (const char* o : {"--wandb-project", "--wandb-entity", "--wandb-run-name", "--wandb-group", "--wandb-run-id",
                        "--mlflow-experiment", "--mlflow-run-name"})
    args.option({o}, o, "not supported; ignored");
  args.list({"--wandb-tags"}, "--wandb-tags", "not supported; ignored");
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
  if (args.flag_set("--report-wandb") || args.flag_set("--report-mlflow"))
    err << "warning: W&B and MLflow reporting are not supported; ignored\n";
  return std::nullopt;
}

}  // namespace traincheck
