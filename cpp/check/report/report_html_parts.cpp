#include "check/report/report_html_parts.h"

#include <chrono>
#include <cstdio>
#include <ctime>

namespace traincheck::report_parts {

std::string esc(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;  // attribute values may be single-quoted
      default: out.push_back(c);
    }
  }
  return out;
}

const std::string_view kCss = R"(
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
.first-bad{font-size:16px;margin:4px 0 8px}.first-bad b{color:#cf222e;font-size:22px}
.timeline-svg{display:block;background:#fff}.timeline-svg text{font-size:11px;fill:#1f2328}
.tl-band{fill:#f6f8fa}.tl-row-first .tl-band{fill:#ffebe9}.tl-mark{fill:#cf222e}
.tl-grid{stroke:#eaeef2}.tl-axis{stroke:#656d76}.timeline-svg .tl-tick{fill:#656d76}
.tl-first{stroke:#8250df;stroke-width:2;stroke-dasharray:4 2}.timeline-svg .tl-first-label{fill:#8250df;font-weight:600}
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

std::string breakdown_table(const std::map<std::string, Counts>& counts) {
  std::string h = "<table><tr><th>Relation</th><th>Failed</th><th>Passed</th><th>Not triggered</th></tr>";
  for (const auto& [rel, c] : counts)
    h += "<tr><td>" + esc(rel) + "</td><td>" + std::to_string(c.failed) + "</td><td>" + std::to_string(c.passed) + "</td><td>" +
         std::to_string(c.not_triggered) + "</td></tr>";
  return h + "</table>";
}

namespace {

// The first attribute by name that is not the tool's own bookkeeping, for the compact sample rows (by
// name: the stored order follows key ids, which depend on parsing order).
std::string first_attribute(const Record& r) {
  const Field* first = nullptr;
  r.for_each_field([&](const Field& f) {
    std::string_view k = key_name(f.key);
    if (k.starts_with("attributes.") && k.find("_TRAINCHECK") == std::string_view::npos &&
        (first == nullptr || k < key_name(first->key)))
      first = &f;
  });
  return first == nullptr ? "" : std::string(key_name(first->key)) + " = " + value_to_display(first->value);
}

}  // namespace

std::string sample_table(const std::vector<const Record*>& records) {
  std::string h = "<table><tr><th>function</th><th>meta_vars.step</th><th>meta_vars.stage</th><th>type</th><th>var_name</th><th>var_type</th><th>attribute</th></tr>";
  for (size_t i = 0; i < records.size() && i < 8; ++i) {
    const Record& r = *records[i];
    h += "<tr><td><code>" + esc(r.function) + "</code></td><td>" + (r.has_step ? std::to_string(r.step) : "") + "</td><td>" +
         esc(r.stage) + "</td><td>" + esc(record_type_name(r.type)) + "</td><td>" + esc(r.var_name) + "</td><td>" +
         esc(r.var_type) + "</td><td>" + esc(first_attribute(r)) + "</td></tr>";
  }
  return h + "</table>";
}

std::string page_head(std::string_view mode, const std::string& output_dir) {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char stamp[64];
  // localtime_r: reports of several sessions may render at once (std::localtime's buffer is shared).
  std::tm local{};
  localtime_r(&now, &local);
  std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &local);
  std::string h = "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>TrainCheck report</title><style>";
  h += kCss;
  h += "</style></head><body><h1>TrainCheck report</h1><div class=\"muted\">" + std::string(mode) + " check &middot; generated " +
       std::string(stamp) + " &middot; " + esc(output_dir) + "</div>";
  return h;
}

std::string card(const std::string& label, const std::string& value, const char* cls) {
  return std::string("<div class=\"card ") + cls + "\"><div class=\"v\">" + value + "</div><div class=\"l\">" + label + "</div></div>";
}

std::string more_rows(size_t left_out, int columns, const std::string& what) {
  if (left_out == 0) return "";
  return "<tr><td colspan=\"" + std::to_string(columns) + "\" class=\"muted\">&hellip; and " + std::to_string(left_out) + " more " +
         what + " (not shown; failed.log and violations_summary.json list them all)</td></tr>";
}

std::string violations_table(std::vector<ViolationTableRow> rows, bool with_trace) {
  if (rows.empty()) return "<p>No violations.</p>";
  std::stable_sort(rows.begin(), rows.end(), [](const ViolationTableRow& a, const ViolationTableRow& b) {
    return violation_row_before(a.row, b.row);
  });
  std::string h = std::string("<table><tr><th>Invariant</th>") + (with_trace ? "<th>Trace</th>" : "") +
                  "<th>First Step</th><th>Last Step</th><th>Count</th></tr>";
  for (size_t shown = 0; shown < rows.size() && shown < kMaxReportRows; ++shown) {
    const ViolationSummaryRow& r = rows[shown].row;
    std::string steps;
    for (size_t i = 0; i < r.steps.size() && i < kMaxListedSteps; ++i) steps += (i ? ", " : "") + std::to_string(r.steps[i]);
    const std::string first = r.first_step ? std::to_string(*r.first_step) : "&ndash;";
    const std::string last = r.last_step ? std::to_string(*r.last_step) : "&ndash;";
    const std::string badge = r.first_stage.empty() ? "" : "<span class=\"badge\">" + esc(r.first_stage) + "</span>";
    const std::string trust = trust_text(r.held_on_programs, r.examples);
    h += "<tr class=\"vrow\"><td><details><summary>" + esc(r.label) + " <span class=\"badge\">" + esc(r.relation) +
         "</span></summary><p class=\"muted\">" + esc(rows[shown].description) + "</p>" +
         (trust.empty() ? "" : "<p class=\"muted\">Trusted: " + esc(trust) + "</p>") + "<p>Steps: " + steps + "</p>" +
         sample_table(rows[shown].samples) + "</details></td>" + (with_trace ? "<td>" + esc(r.trace) + "</td>" : "") + "<td>" +
         first + badge + "</td><td>" + last + "</td><td>" + std::to_string(r.count) + "</td></tr>";
  }
  return h + more_rows(rows.size() - std::min(rows.size(), kMaxReportRows), with_trace ? 5 : 4, "violated invariants") + "</table>";
}

}  // namespace traincheck::report_parts
