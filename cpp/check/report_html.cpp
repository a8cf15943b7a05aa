#include "check/report_html.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <map>

namespace traincheck {

namespace {

std::string esc(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

constexpr std::string_view kCss = R"(
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px;color:#1f2328;background:#f6f8fa}
h1{margin:0 0 4px}h2{margin-top:28px}.muted{color:#656d76;font-size:13px}
.cards{display:flex;gap:12px;flex-wrap:wrap;margin:16px 0}
.card{background:#fff;border:1px solid #d0d7de;border-radius:8px;padding:12px 16px;min-width:140px}
.card .v{font-size:26px;font-weight:600}.card .l{font-size:12px;color:#656d76;text-transform:uppercase}
.bad .v{color:#cf222e}.good .v{color:#1a7f37}
table{border-collapse:collapse;width:100%;background:#fff;margin:8px 0}
th,td{border:1px solid #d0d7de;padding:6px 8px;text-align:left;font-size:13px;vertical-align:top}
th{background:#eaeef2}details summary{cursor:pointer}
.panel{background:#fff;border:1px solid #d0d7de;border-radius:8px;padding:12px 16px;margin:12px 0}
.bar{display:flex;height:14px;border-radius:7px;overflow:hidden;background:#eaeef2;margin:8px 0}
.bar .f{background:#cf222e}.bar .p{background:#2da44e}.bar .n{background:#afb8c1}
.badge{display:inline-block;padding:0 6px;border-radius:10px;background:#ddf4ff;font-size:11px;margin-left:4px}
code{font-size:12px}
)";

std::string pct(size_t part, size_t total) {
  if (total == 0) return "0";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", 100.0 * static_cast<double>(part) / static_cast<double>(total));
  return buf;
}

std::string bar(size_t failed, size_t passed, size_t not_triggered) {
  const size_t total = failed + passed + not_triggered;
  return "<div class=\"bar\"><div class=\"f\" style=\"width:" + pct(failed, total) + "%\"></div><div class=\"p\" style=\"width:" +
         pct(passed, total) + "%\"></div><div class=\"n\" style=\"width:" + pct(not_triggered, total) + "%\"></div></div>";
}

struct Counts {
  size_t failed = 0, passed = 0, not_triggered = 0;
};

std::map<std::string, Counts> relation_counts(const TraceCheckReport& r) {
  std::map<std::string, Counts> out;
  for (const InvariantOutcome& o : r.outcomes) {
    if (!o.relation) continue;
    Counts& c = out[o.invariant->relation];
    if (!o.result.passed()) ++c.failed;
    else if (o.result.triggered) ++c.passed;
    else ++c.not_triggered;
  }
  return out;
}

std::string breakdown_table(const std::map<std::string, Counts>& counts) {
  std::string h = "<table><tr><th>Relation</th><th>Failed</th><th>Passed</th><th>Not triggered</th></tr>";
  for (const auto& [rel, c] : counts)
    h += "<tr><td>" + esc(rel) + "</td><td>" + std::to_string(c.failed) + "</td><td>" + std::to_string(c.passed) + "</td><td>" +
         std::to_string(c.not_triggered) + "</td></tr>";
  return h + "</table>";
}

// The first attribute that is not the tool's own bookkeeping, for the compact sample rows.
std::string first_attribute(const Record& r) {
  for (const Field& f : r.fields) {
    std::string_view k = key_name(f.key);
    if (k.starts_with("attributes.") && k.find("_TRAINCHECK") == std::string_view::npos)
      return std::string(k) + " = " + value_to_display(f.value);
  }
  return "";
}

std::string sample_table(const TraceStore& trace, const InvariantOutcome& o) {
  std::string h = "<table><tr><th>function</th><th>meta_vars.step</th><th>meta_vars.stage</th><th>type</th><th>var_name</th><th>var_type</th><th>attribute</th></tr>";
  size_t shown = 0;
  for (const Violation& v : o.result.violations) {
    for (uint32_t ri : v.records) {
      if (shown++ >= 8) break;
      const Record& r = trace.record(ri);
      h += "<tr><td><code>" + esc(r.function) + "</code></td><td>" + (r.has_step ? std::to_string(r.step) : "") + "</td><td>" +
           esc(r.stage) + "</td><td>" + esc(record_type_name(r.type)) + "</td><td>" + esc(r.var_name) + "</td><td>" +
           esc(r.var_type) + "</td><td>" + esc(first_attribute(r)) + "</td></tr>";
    }
  }
  return h + "</table>";
}

}  // namespace

std::string render_report_html(const std::vector<TraceCheckReport>& reports, const std::string& output_dir) {
  size_t total_invariants = 0, failed = 0, passed = 0, not_triggered = 0, unsupported = 0, violations = 0;
  std::map<std::string, Counts> overall;
  for (const TraceCheckReport& r : reports) {
    total_invariants = std::max(total_invariants, r.outcomes.size());
    failed += r.count_failed();
    passed += r.count_passed();
    not_triggered += r.count_not_triggered();
    unsupported += r.count_unsupported();
    for (const InvariantOutcome& o : r.outcomes) violations += o.result.violation_count;
    for (const auto& [rel, c] : relation_counts(r)) {
      overall[rel].failed += c.failed;
      overall[rel].passed += c.passed;
      overall[rel].not_triggered += c.not_triggered;
    }
  }
  const size_t triggered = failed + passed;
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char stamp[64];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", std::localtime(&now));

  std::string h = "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>TrainCheck report</title><style>";
  h += kCss;
  h += "</style></head><body><h1>TrainCheck report</h1><div class=\"muted\">offline check &middot; generated " + std::string(stamp) +
       " &middot; " + esc(output_dir) + "</div>";
  auto card = [&](const std::string& label, const std::string& value, const char* cls) {
    h += std::string("<div class=\"card ") + cls + "\"><div class=\"v\">" + value + "</div><div class=\"l\">" + label + "</div></div>";
  };
  h += "<div class=\"cards\">";
  card("Total invariants", std::to_string(total_invariants), "");
  card("Traces", std::to_string(reports.size()), "");
  card("Triggered", std::to_string(triggered), "");
  card("Pass rate", pct(passed, triggered) + "%", passed == triggered ? "good" : "");
  card("Invariants violated", std::to_string(failed), failed ? "bad" : "good");
  card("Violations", std::to_string(violations), violations ? "bad" : "good");
  if (unsupported) card("Not checked (relation not implemented)", std::to_string(unsupported), "");
  h += "</div>";

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
      if (o.relation && !o.result.passed()) rows.push_back(Row{&r, &o, violation_steps(*r.trace, o)});
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return a.outcome->result.violation_count > b.outcome->result.violation_count;
  });
  if (rows.empty()) {
    h += "<p>No violations.</p>";
  } else {
    h += "<table><tr><th>Invariant</th><th>Trace</th><th>First Step</th><th>Last Step</th><th>Count</th></tr>";
    for (const Row& row : rows) {
      const InvariantOutcome& o = *row.outcome;
      std::string first = row.steps.empty() ? "&ndash;" : std::to_string(row.steps.front());
      std::string last = row.steps.empty() ? "&ndash;" : std::to_string(row.steps.back());
      std::string stage_badge;
      if (!o.result.violations.empty() && !o.result.violations.front().records.empty())
        stage_badge = "<span class=\"badge\">" + esc(row.report->trace->record(o.result.violations.front().records.front()).stage) + "</span>";
      std::string steps;
      for (size_t i = 0; i < row.steps.size() && i < 500; ++i) steps += (i ? ", " : "") + std::to_string(row.steps[i]);
      h += "<tr><td><details><summary>" + esc(o.display_name) + " <span class=\"badge\">" + esc(o.invariant->relation) +
           "</span></summary><p class=\"muted\">" + esc(o.invariant->text_description) + "</p><p>Steps: " + steps + "</p>" +
           sample_table(*row.report->trace, o) + "</details></td><td>" + esc(row.report->name) + "</td><td>" + first + stage_badge +
           "</td><td>" + last + "</td><td>" + std::to_string(o.result.violation_count) + "</td></tr>";
    }
    h += "</table>";
  }

  h += "<h2>Traces</h2>";
  for (const TraceCheckReport& r : reports) {
    h += "<div class=\"panel\"><h3>" + esc(r.name) + "</h3><div class=\"muted\">" + std::to_string(r.count_failed()) + " failed &middot; " +
         std::to_string(r.count_passed()) + " passed &middot; " + std::to_string(r.count_not_triggered()) + " not triggered</div>" +
         bar(r.count_failed(), r.count_passed(), r.count_not_triggered());
    std::vector<const InvariantOutcome*> top;
    for (const InvariantOutcome& o : r.outcomes)
      if (o.relation && !o.result.passed()) top.push_back(&o);
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
