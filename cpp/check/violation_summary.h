// The violation summary (docs/formats.md §Violation summary): per violated invariant its label, first and
// last step and count. One set of rows feeds violations_summary.json, the console summary of
// traincheck-check and -onlinecheck, and report.html's timeline, so they never disagree.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "check/checker.h"

namespace traincheck {

struct ViolationSummaryRow {
  std::string label;     // the relation's display name, else the text description
  std::string relation;  // relation class name
  std::string trace;     // trace (output folder) name; "" where only one trace is checked
  std::optional<int64_t> first_step, last_step;  // unset when no violating record has a step
  uint64_t count = 0;                            // violations, all of them (not only those kept)
  std::vector<int64_t> steps;                    // distinct violating steps, ascending, as many as were kept
  // The stage (meta_vars.stage) of the first violating record at the first step and of the last one at
  // the last step; "" when unknown.
  std::string first_stage, last_stage;
  // Why to trust it: the corpus programs its invariant held on (a vetted pack's
  // held_on_programs; unset otherwise) and the examples it was inferred from (num_positive_examples).
  std::optional<int64_t> held_on_programs, examples;
};

// The row's trust from its invariant.
void set_trust(ViolationSummaryRow& row, const Invariant& invariant);
// "held on 8 programs, 120 examples", "held on 120 examples", or "" when neither is known.
std::string trust_text(std::optional<int64_t> held_on_programs, std::optional<int64_t> examples);

// The row of one violated invariant of an offline trace check (its trace field left empty).
ViolationSummaryRow violation_summary_row(const TraceStore& trace, const InvariantOutcome& outcome);
// The rows of one offline trace check, sorted by first step (sort_by_first_step).
std::vector<ViolationSummaryRow> violation_summary_rows(const TraceCheckReport& report);

// The order of violated invariants in every table, summary and report: the most trusted first (more
// corpus programs held on; rows of invariants not from a pack count as none), then earliest first step
// first, rows without a step last; then more violations first, then by label, then by trace.
bool violation_row_before(const ViolationSummaryRow& a, const ViolationSummaryRow& b);
void sort_by_first_step(std::vector<ViolationSummaryRow>& rows);

std::optional<int64_t> first_violation_step(const std::vector<ViolationSummaryRow>& rows);

// The console table, one line per row in the given order, at most `max_rows` of them and then a line
// saying how many more there are:
//   first step  last step  violations  invariant
//            3          9           7  Dropout.forward() always calls functional.dropout()
// A row's trace, when set, follows its label in brackets. Every line starts with `indent`.
std::string format_violation_summary(const std::vector<ViolationSummaryRow>& rows, size_t max_rows,
                                     const std::string& indent = "  ");

}  // namespace traincheck
