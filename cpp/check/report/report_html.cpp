#include "check/report/report_html.h"

#include <algorithm>
#include <map>

#include "check/report/report_html_parts.h"
#include "check/report/report_timeline.h"
#include "trace/lost_records.h"

namespace traincheck {

namespace {

using namespace report_parts;

std::map<std::string, Counts> relation_counts(const TraceCheckReport& r) {
  std::map<std::string, Counts> out;
  for (const InvariantOutcome& o : r.outcomes) {
    Counts& c = out[o.invariant->relation];
    if (!o.result.passed()) ++c.failed;
    else if (o.result.triggered) ++c.passed;
    else ++c.not_triggered;
  }
  return out;
}

std::vector<const Record*> sample_records(const TraceStore& trace, const InvariantOutcome& o) {
  std::vector<const Record*> records;
  for (const Violation& v : o.result.violations)
    for (uint32_t ri : v.records)
      if (records.size() < 8) records.push_back(&trace.record(ri));
  return records;
}

}  // namespace

std::string render_report_html(const std::vector<TraceCheckReport>& reports, const std::string& output_dir) {
  size_t total_invariants = 0, failed = 0, passed = 0, not_triggered = 0, violations = 0;
  std::map<std::string, Counts> overall;
  for (const TraceCheckReport& r : reports) {
    total_invariants = std::max(total_invariants, r.outcomes.size());
    failed += r.count_failed();
    passed += r.count_passed();
    not_triggered += r.count_not_triggered();
    for (const InvariantOutcome& o : r.outcomes) violations += o.result.violation_count;
    for (const auto& [rel, c] : relation_counts(r)) {
      overall[rel].failed += c.failed;
      overall[rel].passed += c.passed;
      overall[rel].not_triggered += c.not_triggered;
    }
  }
  const size_t triggered = failed + passed;
  std::vector<ViolationSummaryRow> summary;  // every trace's rows, for the timeline
  for (const TraceCheckReport& r : reports)
    for (ViolationSummaryRow& row : violation_summary_rows(r)) {
      if (reports.size() > 1) row.trace = r.name;
      summary.push_back(std::move(row));
    }
  const std::optional<int64_t> first_bad = first_violation_step(summary);
  std::string h = page_head("offline", output_dir);
  for (const TraceCheckReport& r : reports)
    if (r.trace != nullptr && r.trace->records_lost())
      h += "<p class=\"panel bad\">" + esc(r.name + ": " + incomplete_trace_line(r.trace->records_lost(), r.trace->files_with_lost_records())) + "</p>";
  h += "<div class=\"cards\">";
  h += card("Total invariants", std::to_string(total_invariants), "");
  h += card("Traces", std::to_string(reports.size()), "");
  h += card("Triggered", std::to_string(triggered), "");
  h += card("Pass rate", pct(passed, triggered) + "%", passed == triggered ? "good" : "");
  h += card("Invariants violated", std::to_string(failed), failed ? "bad" : "good");
  h += card("Violations", std::to_string(violations), violations ? "bad" : "good");
  h += card("First bad step", first_bad ? std::to_string(*first_bad) : "&ndash;", first_bad ? "bad" : "");
  h += "</div>";
  h += render_violation_timeline(std::move(summary));

  // Violations, earliest first (as the timeline above, the console table and violations_summary.json).
  h += "<h2>Violations</h2>";
  std::vector<ViolationTableRow> rows;
  for (const TraceCheckReport& r : reports)
    for (const InvariantOutcome& o : r.outcomes)
      if (!o.result.passed()) {
        ViolationSummaryRow row = violation_summary_row(*r.trace, o);
        row.trace = r.name;
        rows.push_back(ViolationTableRow{std::move(row), o.invariant->text_description.str(), sample_records(*r.trace, o)});
      }
  h += violations_table(std::move(rows), true);

  h += "<h2>Traces</h2>";
  for (const TraceCheckReport& r : reports) {
    h += "<div class=\"panel\"><h3>" + esc(r.name) + "</h3><div class=\"muted\">" + std::to_string(r.count_failed()) + " failed &middot; " +
         std::to_string(r.count_passed()) + " passed &middot; " + std::to_string(r.count_not_triggered()) + " not triggered</div>" +
         bar(r.count_failed(), r.count_passed(), r.count_not_triggered());
    std::vector<const InvariantOutcome*> top;
    for (const InvariantOutcome& o : r.outcomes)
      if (!o.result.passed()) top.push_back(&o);
    std::stable_sort(top.begin(), top.end(), [](auto* a, auto* b) { return a->result.violation_count > b->result.violation_count; });
    if (!top.empty()) {
      h += "<h4>Failed invariants (top 10)</h4><ol>";
      for (size_t i = 0; i < top.size() && i < 10; ++i)
        h += "<li>" + esc(top[i]->display_name) + " &times; " + std::to_string(top[i]->result.violation_count) + "</li>";
      h += "</ol>";
    }
    h += "<h4>Relation breakdown</h4>" + breakdown_table(relation_counts(r)) + "</div>";
  }
  h += "<h2>Relation breakdown (overall)</h2>" + breakdown_table(overall);
  h += "</body></html>\n";
  return h;
}

}  // namespace traincheck
