#include "check/report/report_html.h"

#include <algorithm>
#include <map>

#include "check/report/report_html_parts.h"
#include "check/report/report_timeline.h"

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

std::string trace_sample_table(const TraceStore& trace, const InvariantOutcome& o) {
  std::vector<const Record*> records;
  for (const Violation& v : o.result.violations)
    for (uint32_t ri : v.records)
      if (records.size() < 8) records.push_back(&trace.record(ri));
  return sample_table(records);
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

  // Violations, most widespread first.
  h += "<h2>Violations</h2>";
  struct Row {
    const TraceCheckReport* report;
    const InvariantOutcome* outcome;
    std::vector<int64_t> steps;
  };
  std::vector<Row> rows;
  for (const TraceCheckReport& r : reports)
    for (const InvariantOutcome& o : r.outcomes)
      if (!o.result.passed()) rows.push_back(Row{&r, &o, violation_steps(*r.trace, o)});
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return a.outcome->result.violation_count > b.outcome->result.violation_count;
  });
  if (rows.empty()) {
    h += "<p>No violations.</p>";
  } else {
    h += "<table><tr><th>Invariant</th><th>Trace</th><th>First Step</th><th>Last Step</th><th>Count</th></tr>";
    for (size_t shown = 0; shown < rows.size() && shown < kMaxReportRows; ++shown) {
      const Row& row = rows[shown];
      const InvariantOutcome& o = *row.outcome;
      std::string first = row.steps.empty() ? "&ndash;" : std::to_string(row.steps.front());
      std::string last = row.steps.empty() ? "&ndash;" : std::to_string(row.steps.back());
      std::string stage_badge;
      if (!o.result.violations.empty() && !o.result.violations.front().records.empty())
        stage_badge = "<span class=\"badge\">" + esc(row.report->trace->record(o.result.violations.front().records.front()).stage) + "</span>";
      std::string steps;
      for (size_t i = 0; i < row.steps.size() && i < kMaxListedSteps; ++i) steps += (i ? ", " : "") + std::to_string(row.steps[i]);
      h += "<tr class=\"vrow\"><td><details><summary>" + esc(o.display_name) + " <span class=\"badge\">" + esc(o.invariant->relation) +
           "</span></summary><p class=\"muted\">" + esc(o.invariant->text_description.str()) + "</p><p>Steps: " + steps + "</p>" +
           trace_sample_table(*row.report->trace, o) + "</details></td><td>" + esc(row.report->name) + "</td><td>" + first + stage_badge +
           "</td><td>" + last + "</td><td>" + std::to_string(o.result.violation_count) + "</td></tr>";
    }
    h += more_rows(rows.size() - std::min(rows.size(), kMaxReportRows), 5, "violated invariants") + "</table>";
  }

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
