// The command line that traincheck-check and traincheck-onlinecheck share
// (docs/formats.md §traincheck-check, §traincheck-onlinecheck): traces or trace folders, invariants, output
// folder, report and debug flags, and the original's W&B / MLflow flags (check/report/report_exporter.h).
#pragma once

#include <iosfwd>
#include <optional>
#include <string>

#include "common/cli_args.h"

namespace traincheck {

// Adds the shared flags. `output_prefix` names the default output folder in the help
// ("traincheck_checker_results").
void add_check_flags(ArgParser& args, const std::string& output_prefix);

// Parses, handles -h, and checks that -i and one of -t/-f are given. nullopt: go on; otherwise the
// command's exit status (usage and the error already written to `err`).
std::optional<int> parse_check_flags(ArgParser& args, const std::string& prog, int argc, const char* const* argv, std::ostream& err);

// When the results folder `dir` already holds files (an earlier check's, the user's own): a line naming
// the folder and the first of them, saying that results of the same name replace theirs; empty otherwise.
// The original writes into such a folder silently; the checkers keep doing so, but never unsaid.
std::string existing_results_note(const std::string& dir);

}  // namespace traincheck
