#include "check/report/report_html_online.h"

#include <algorithm>

#include "check/report/report_timeline.h"

namespace traincheck {

using namespace report_parts;

namespace {

ViolationSummaryRow summary_row(const OnlineReportRow& row) {
  return ViolationSummaryRow{row.display_name, row.invariant->relation, "", row.first_step, row.last_step, row.count,
                             row.steps, row.first_stage, "", row.invariant->held_on_programs,
                             row.invariant->num_positive_examples};
}

}  // namespace

std::string render_online_report_html(OnlineReportData d) {
  const size_t failing = d.rows.size();
  std::vector<ViolationSummaryRow> summary;
  for (const OnlineReportRow& row : d.rows) summary.push_back(summary_row(row));
  const std::optional<int64_t> first_bad = first_violation_step(summary);
  std::string h = page_head("online", d.output_dir);
  if (!d.incomplete_note.empty()) h += "<p class=\"panel bad\">" + esc(d.incomplete_note) + "</p>";
  h += "<div class=\"cards\">";
  h += card("Total invariants", std::to_string(d.total_invariants), "");
  h += card("Triggered", std::to_string(d.triggered), "");
  h += card("Pass rate", pct(d.passing, d.triggered) + "%", failing ? "" : "good");
  h += card("Violations", std::to_string(d.violations), d.violations ? "bad" : "good");
  h += card("Current step", d.current_step ? std::to_string(*d.current_step) : "&ndash;", "");
  h += card("First bad step", first_bad ? std::to_string(*first_bad) : "&ndash;", first_bad ? "bad" : "");
  if (d.not_checked) h += card("Not checked (no online check)", std::to_string(d.not_checked), "");
  h += "</div>";

  h += "<div class=\"panel\"><h3>Checking Progress</h3><div class=\"muted\">" + std::to_string(d.passing) + " passing &middot; " +
       std::to_string(failing) + " failing &middot; " + std::to_string(d.not_triggered) + " not triggered" +
       (d.current_stage.empty() ? "" : " &middot; stage " + esc(d.current_stage)) + "</div>" + bar(failing, d.passing, d.not_triggered);
  if (!d.not_triggered_labels.empty()) {
    h += "<details><summary>Not triggered yet</summary><ul>";
    for (size_t i = 0; i < d.not_triggered_labels.size() && i < kMaxReportRows; ++i) h += "<li>" + esc(d.not_triggered_labels[i]) + "</li>";
    if (d.not_triggered_labels.size() > kMaxReportRows)
      h += "<li class=\"muted\">&hellip; and " + std::to_string(d.not_triggered_labels.size() - kMaxReportRows) + " more</li>";
    h += "</ul></details>";
  }
  h += "</div>";

  h += render_violation_timeline(std::move(summary));

  // Violations in the order they started (the original sorts online rows by first violation step).
  h += "<h2>Violations</h2>";
  std::vector<ViolationTableRow> rows;
  for (OnlineReportRow& row : d.rows)
    rows.push_back(ViolationTableRow{summary_row(row), row.invariant->text_description.str(), std::move(row.samples)});
  h += violations_table(std::move(rows), false);
  h += "<h2>Relation breakdown (overall)</h2>" + breakdown_table(d.relations);
  h += "</body></html>\n";
  return h;
}

}  // namespace traincheck
