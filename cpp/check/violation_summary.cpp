#include "check/violation_summary.h"

#include <algorithm>
#include <cstdio>

#include "common/console_text.h"

namespace traincheck {

ViolationSummaryRow violation_summary_row(const TraceStore& trace, const InvariantOutcome& o) {
  ViolationSummaryRow r;
  r.label = o.display_name;
  r.relation = o.invariant->relation;
  r.count = o.result.violation_count;
  set_trust(r, *o.invariant);
  r.steps = violation_steps(trace, o);
  if (r.steps.empty()) return r;
  r.first_step = r.steps.front();
  r.last_step = r.steps.back();
  bool first_seen = false;
  for (const Violation& v : o.result.violations)
    for (uint32_t i : v.records) {
      const Record& record = trace.record(i);
      if (!record.has_step) continue;
      if (record.step == *r.first_step && !first_seen) {
        r.first_stage = std::string(record.stage);
        first_seen = true;
      }
      if (record.step == *r.last_step) r.last_stage = std::string(record.stage);
    }
  return r;
}

std::vector<ViolationSummaryRow> violation_summary_rows(const TraceCheckReport& report) {
  std::vector<ViolationSummaryRow> rows;
  for (const InvariantOutcome& o : report.outcomes)
    if (!o.result.passed()) rows.push_back(violation_summary_row(*report.trace, o));
  sort_by_first_step(rows);
  return rows;
}

void set_trust(ViolationSummaryRow& row, const Invariant& invariant) {
  row.held_on_programs = invariant.held_on_programs;
  row.examples = invariant.num_positive_examples;
}

std::string trust_text(std::optional<int64_t> held_on_programs, std::optional<int64_t> examples) {
  std::string out;
  if (held_on_programs) out = std::to_string(*held_on_programs) + (*held_on_programs == 1 ? " program" : " programs");
  if (examples) out += (out.empty() ? "" : ", ") + std::to_string(*examples) + (*examples == 1 ? " example" : " examples");
  return out.empty() ? out : "held on " + out;
}

bool violation_row_before(const ViolationSummaryRow& a, const ViolationSummaryRow& b) {
  const int64_t programs_a = a.held_on_programs.value_or(0), programs_b = b.held_on_programs.value_or(0);
  if (programs_a != programs_b) return programs_a > programs_b;
  if (a.first_step != b.first_step) return !b.first_step || (a.first_step && *a.first_step < *b.first_step);
  if (a.count != b.count) return a.count > b.count;
  if (a.label != b.label) return a.label < b.label;
  return a.trace < b.trace;
}

void sort_by_first_step(std::vector<ViolationSummaryRow>& rows) { std::stable_sort(rows.begin(), rows.end(), violation_row_before); }

std::optional<int64_t> first_violation_step(const std::vector<ViolationSummaryRow>& rows) {
  std::optional<int64_t> first;
  for (const ViolationSummaryRow& r : rows)
    if (r.first_step && (!first || *r.first_step < *first)) first = r.first_step;
  return first;
}

std::string format_violation_summary(const std::vector<ViolationSummaryRow>& rows, size_t max_rows, const std::string& indent) {
  auto step = [](const std::optional<int64_t>& s) { return s ? std::to_string(*s) : std::string("-"); };
  char line[96];
  std::snprintf(line, sizeof line, "%10s %10s %11s  ", "first step", "last step", "violations");
  std::string out = indent + line + "invariant\n";
  const size_t shown = std::min(rows.size(), max_rows);
  for (size_t i = 0; i < shown; ++i) {
    const ViolationSummaryRow& r = rows[i];
    std::snprintf(line, sizeof line, "%10s %10s %11llu  ", step(r.first_step).c_str(), step(r.last_step).c_str(),
                  static_cast<unsigned long long>(r.count));
    // Labels hold trace names: escaped and cut, the table is for a terminal (console_text.h).
    // A pack's invariant says why it is trusted; the others' rows stay as they were.
    const std::string trust = r.held_on_programs ? " (" + trust_text(r.held_on_programs, r.examples) + ")" : "";
    out += indent + line + console_text(r.label) + (r.trace.empty() ? "" : " [" + console_text(r.trace) + "]") + trust + "\n";
  }
  if (rows.size() > shown) out += indent + "... and " + std::to_string(rows.size() - shown) + " more violated invariants\n";
  return out;
}

}  // namespace traincheck
