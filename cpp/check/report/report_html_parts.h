// Pieces shared by the offline and the online report.html (report_html.cpp, report_html_online.cpp):
// escaping, the stylesheet, bars, breakdown tables and the compact sample-record table
// (docs/formats.md §report.html).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "check/violation_summary.h"
#include "trace/record.h"

namespace traincheck::report_parts {

std::string esc(std::string_view s);
extern const std::string_view kCss;

// "12.5": part/total in percent with one decimal ("0" when total is 0).
std::string pct(size_t part, size_t total);
// The failed/passed/not-triggered bar.
std::string bar(size_t failed, size_t passed, size_t not_triggered);

struct Counts {
  size_t failed = 0, passed = 0, not_triggered = 0;
};
std::string breakdown_table(const std::map<std::string, Counts>& counts);

// Compact rows (function, step, stage, type, var_name, var_type, first attribute), at most 8.
std::string sample_table(const std::vector<const Record*>& records);

// The page up to and including the summary line under the title: "<mode> check · generated <now> · <dir>".
std::string page_head(std::string_view mode, const std::string& output_dir);
std::string card(const std::string& label, const std::string& value, const char* cls);

// A report lists at most this many violated invariants (earliest first: violations_table) and this many
// labels in any list: 100k violated invariants made a 122 MB page. The rest are counted in a last row;
// failed.log and violations_summary.json have them all.
inline constexpr size_t kMaxReportRows = 1000;
// The steps listed for one invariant.
inline constexpr size_t kMaxListedSteps = 500;

// "<tr><td colspan=N>... and K more ...</td></tr>", or "" when nothing was left out.
std::string more_rows(size_t left_out, int columns, const std::string& what);

// One row of a report's violations table, from either kind of result: its summary row, the invariant's
// description and sample records (at most 8 shown).
struct ViolationTableRow {
  ViolationSummaryRow row;
  std::string description;
  std::vector<const Record*> samples;
};
// The violations table of both report modes: one row markup, rows in the order of every other table
// (violation_row_before), at most kMaxReportRows, a Trace column when `with_trace`; "No violations."
// when there are none.
std::string violations_table(std::vector<ViolationTableRow> rows, bool with_trace);

}  // namespace traincheck::report_parts
