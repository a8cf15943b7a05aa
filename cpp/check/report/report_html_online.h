// report.html in online mode (docs/formats.md §report.html): summary cards with the current step, a "Checking
// Progress" panel (passing / failing / not-triggered bar and the not-triggered list), the violations
// table sorted by first violation step, and the relation breakdown. No per-trace panels.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "check/report/report_html_parts.h"
#include "invariant/invariant.h"
#include "trace/record.h"

namespace traincheck {

struct OnlineReportRow {
  const Invariant* invariant = nullptr;
  std::string display_name;
  uint64_t count = 0;
  std::vector<int64_t> steps;  // ascending (as many as the checker kept)
  std::optional<int64_t> first_step, last_step;
  std::string first_stage;
  std::vector<const Record*> samples;
};

struct OnlineReportData {
  std::string output_dir;
  size_t total_invariants = 0, triggered = 0, passing = 0, not_triggered = 0, not_checked = 0;
  uint64_t violations = 0;
  std::optional<int64_t> current_step;
  std::string current_stage;
  std::vector<std::string> not_triggered_labels;  // at most 50
  std::vector<OnlineReportRow> rows;              // violated invariants, any order
  std::map<std::string, report_parts::Counts> relations;
  std::string incomplete_note;  // "" or the line saying records were lost (trace/lost_records.h)
};

std::string render_online_report_html(OnlineReportData data);

}  // namespace traincheck
