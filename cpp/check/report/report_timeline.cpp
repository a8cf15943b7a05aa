#include "check/report/report_timeline.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "check/report/report_html_parts.h"

namespace traincheck {

namespace {

using report_parts::esc;

// Geometry of the SVG, in its own units (it scales to the page width through viewBox).
constexpr double kWidth = 1000, kLabelWidth = 330, kPlotLeft = 340, kPlotRight = 975;
constexpr double kTop = 26, kRowHeight = 18, kMarkHeight = 12, kAxisHeight = 36;
constexpr size_t kLabelChars = 48;

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// At most `chars` characters (UTF-8 aware: never cuts inside a character), with an ellipsis when cut.
std::string shorten(const std::string& s, size_t chars) {
  size_t count = 0, i = 0;
  for (; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) continue;  // continuation byte
    if (count == chars) break;
    ++count;
  }
  return i >= s.size() ? s : s.substr(0, i) + "\u2026";
}

// A 1, 2 or 5 times 10^k tick spacing that gives at most about eight ticks over the span.
int64_t tick_spacing(int64_t span) {
  int64_t spacing = 1;
  for (;;) {
    for (int64_t m : {1, 2, 5})
      if (span / (spacing * m) <= 8) return spacing * m;
    spacing *= 10;
  }
}

std::string row_name(const ViolationSummaryRow& r) { return r.trace.empty() ? r.label : r.label + " [" + r.trace + "]"; }

}  // namespace

std::string render_violation_timeline(std::vector<ViolationSummaryRow> rows, size_t max_rows) {
  sort_by_first_step(rows);
  std::vector<const ViolationSummaryRow*> stepped;
  size_t without_step = 0;
  for (const ViolationSummaryRow& r : rows) {
    if (r.steps.empty()) ++without_step;
    else stepped.push_back(&r);
  }
  std::string h = "<div class=\"panel timeline\"><h2>When it went wrong</h2>";
  if (stepped.empty()) {
    h += rows.empty() ? "<p>No violations.</p>"
                      : "<p>No violating record has a step (meta_vars.step), so there is no timeline.</p>";
    return h + "</div>";
  }

  // The first bad step and what broke there.
  const int64_t first = *stepped.front()->first_step;
  size_t at_first = 0;
  for (const ViolationSummaryRow* r : stepped) at_first += *r->first_step == first;
  h += "<p class=\"first-bad\">First bad step: <b class=\"first-bad-step\">" + std::to_string(first) + "</b> &mdash; " +
       esc(row_name(*stepped.front()));
  if (at_first > 1) h += " and " + std::to_string(at_first - 1) + " more invariant" + (at_first > 2 ? "s" : "") + " first violated there";
  h += "</p>";

  const size_t shown = std::min(stepped.size(), max_rows);
  int64_t lo = first, hi = first;
  for (size_t i = 0; i < shown; ++i) {
    hi = std::max(hi, stepped[i]->steps.back());
    if (stepped[i]->last_step) hi = std::max(hi, *stepped[i]->last_step);
  }
  const int64_t span = std::max<int64_t>(hi - lo, 1);
  const double plot_width = kPlotRight - kPlotLeft;
  auto x_of = [&](int64_t step) { return kPlotLeft + plot_width * static_cast<double>(step - lo) / static_cast<double>(span); };
  // One step wide where steps are few, never thinner than 2 units.
  const double mark_width = std::clamp(plot_width / static_cast<double>(span + 1), 2.0, 12.0);
  const double height = kTop + kRowHeight * static_cast<double>(shown) + kAxisHeight;

  h += "<svg class=\"timeline-svg\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " + num(kWidth) + " " + num(height) +
       "\" width=\"100%\" role=\"img\" aria-label=\"violations per training step, by invariant\">";
  // Axis: ticks and step numbers under the rows.
  const double axis_y = kTop + kRowHeight * static_cast<double>(shown);
  h += "<line class=\"tl-axis\" x1=\"" + num(kPlotLeft) + "\" y1=\"" + num(axis_y) + "\" x2=\"" + num(kPlotRight) + "\" y2=\"" +
       num(axis_y) + "\"/>";
  const int64_t spacing = tick_spacing(span);
  for (int64_t t = (lo / spacing) * spacing; t <= hi; t += spacing) {
    if (t < lo) continue;
    const double x = x_of(t);
    h += "<line class=\"tl-grid\" x1=\"" + num(x) + "\" y1=\"" + num(kTop) + "\" x2=\"" + num(x) + "\" y2=\"" + num(axis_y + 4) + "\"/>";
    h += "<text class=\"tl-tick\" x=\"" + num(x) + "\" y=\"" + num(axis_y + 16) + "\" text-anchor=\"middle\">" + std::to_string(t) + "</text>";
  }
  h += "<text class=\"tl-tick\" x=\"" + num(kPlotRight) + "\" y=\"" + num(axis_y + 28) + "\" text-anchor=\"end\">training step</text>";

  for (size_t i = 0; i < shown; ++i) {
    const ViolationSummaryRow& r = *stepped[i];
    const std::string name = row_name(r);
    const double y = kTop + kRowHeight * static_cast<double>(i);
    const bool first_row = *r.first_step == first;
    h += "<g class=\"tl-row" + std::string(first_row ? " tl-row-first" : "") + "\" data-label=\"" + esc(name) + "\">";
    h += "<title>" + esc(name) + ": " + std::to_string(r.count) + " violations, steps " + std::to_string(*r.first_step) + "\u2013" +
         std::to_string(r.last_step ? *r.last_step : r.steps.back()) + "</title>";
    h += "<rect class=\"tl-band\" x=\"" + num(kPlotLeft) + "\" y=\"" + num(y + 1) + "\" width=\"" + num(plot_width) + "\" height=\"" +
         num(kRowHeight - 2) + "\"/>";
    h += "<text class=\"tl-label\" x=\"" + num(kLabelWidth) + "\" y=\"" + num(y + kRowHeight * 0.7) + "\" text-anchor=\"end\">" +
         esc(shorten(name, kLabelChars)) + "</text>";
    for (int64_t s : r.steps)
      h += "<rect class=\"tl-mark\" data-step=\"" + std::to_string(s) + "\" x=\"" + num(x_of(s) - mark_width / 2) + "\" y=\"" +
           num(y + (kRowHeight - kMarkHeight) / 2) + "\" width=\"" + num(mark_width) + "\" height=\"" + num(kMarkHeight) +
           "\"><title>" + esc(name) + " \u2014 step " + std::to_string(s) + "</title></rect>";
    h += "</g>";
  }
  // Drawn last so that it lies over the marks.
  const double fx = x_of(first);
  h += "<line class=\"tl-first\" x1=\"" + num(fx) + "\" y1=\"" + num(kTop - 6) + "\" x2=\"" + num(fx) + "\" y2=\"" + num(axis_y) + "\"/>";
  h += "<text class=\"tl-first-label\" x=\"" + num(fx) + "\" y=\"" + num(kTop - 10) + "\" text-anchor=\"" +
       (fx > kPlotRight - 120 ? "end" : "start") + "\">first bad step " + std::to_string(first) + "</text>";
  h += "</svg>";

  std::string notes;
  if (stepped.size() > shown)
    notes += "Showing the " + std::to_string(shown) + " earliest-violated of " + std::to_string(stepped.size()) + " invariants; " +
             std::to_string(stepped.size() - shown) + " more are in the table below. ";
  if (without_step) notes += std::to_string(without_step) + " violated invariant" + (without_step > 1 ? "s have" : " has") + " no step and no row. ";
  if (!notes.empty()) h += "<p class=\"muted tl-more\">" + notes + "</p>";
  return h + "</div>";
}

}  // namespace traincheck
