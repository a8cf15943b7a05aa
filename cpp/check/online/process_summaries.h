// The in-process checker's per-invariant results across the processes of one run.
//
// Every process of a collected run (the script, DDP ranks, DataLoader workers) checks its own records and
// writes summary_<pid>.json at exit. traincheck-collect then prints one violation table for the whole
// run, so each summary carries its violated invariants ("violation_summary"), named by identity: two
// processes that violate the same invariant are one row, with the earliest first step, the latest last
// step and the counts added.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "check/violation_summary.h"
#include "trace/value.h"

namespace traincheck {

struct ProcessViolationRow {
  std::string identity;  // Invariant::identity()
  ViolationSummaryRow row;
};

// [{"invariant": identity, "label", "relation", "first_step", "last_step" (null when unknown), "count",
//   "held_on_programs", "examples" (null when unknown)}, ...]
Value process_violation_rows_value(const std::vector<ProcessViolationRow>& rows);

// The rows of every summary's "violation_summary", merged by invariant, sorted by first step. A summary
// without the field (an older collector) or a malformed row is skipped.
std::vector<ViolationSummaryRow> merge_process_summaries(const std::vector<Value>& summaries);

// The console table of a run from its summary_<pid>.json texts; "" when nothing was violated. A text
// that is not JSON is skipped.
std::string format_run_violation_table(const std::vector<std::string>& summary_texts, size_t max_rows);

// What traincheck-collect prints at exit about the in-process check of a run: its totals over every
// process's summary_<pid>.json in `folder` (the run's online_check/), and its violation table.
struct RunOnlineCheckReport {
  bool checked = false;  // the folder exists: the run checked online
  // "online check: N violations of V invariants (T triggered, C checked, U not checked); see <failed.log>",
  // or, with none, "online check: no violation of C checks (T triggered, C checked, U not checked)"; then
  // a line for the invariants no process could evaluate (their summaries' "unevaluated", counted as not
  // checked: "online check: 6 invariants not evaluated: no torch.nn.Parameter state recorded (6)"), and
  // one for those the run's library versions left unchecked (version_gate.h).
  std::string line;
  std::string table;     // format_run_violation_table; "" when nothing was violated
};
// Violations are added up and invariants counted once over the processes (by identity); checked and
// not checked are the largest of any process (each checks the same set). A summary that cannot be read
// or parsed is skipped. With no summary at all, failed.log (one line per violation) is all there is, and
// the line says what is known from the program's `exit_code`: not 0, the exit code (killed, stopped at
// start, or failed); 0, the check itself could not start or write its results. Without
// failed.log either, no process started checking, and the line says "nothing checked".
RunOnlineCheckReport run_online_check_report(const std::string& folder, size_t max_rows,
                                             std::optional<int> exit_code = std::nullopt);

}  // namespace traincheck
