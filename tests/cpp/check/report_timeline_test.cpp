// report.html's timeline: one row per violated invariant, a mark per violating step, the first bad step
// stated and drawn, the earliest rows kept when there are hundreds, every label escaped.
#include "check/report/report_timeline.h"

#include <gtest/gtest.h>

using namespace traincheck;

namespace {

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

ViolationSummaryRow row(std::string label, std::vector<int64_t> steps) {
  ViolationSummaryRow r;
  r.label = std::move(label);
  r.relation = "APIContainRelation";
  r.count = steps.size();
  r.steps = std::move(steps);
  if (!r.steps.empty()) {
    r.first_step = r.steps.front();
    r.last_step = r.steps.back();
  }
  return r;
}

}  // namespace

TEST(ReportTimeline, MarksEachViolatingStepAndStatesTheFirstBadStep) {
  const std::string h = render_violation_timeline({row("late", {40, 41, 42}), row("Dropout.forward() always calls functional.dropout()", {12, 30})});
  EXPECT_EQ(count(h, "class=\"tl-mark\""), 5u);
  EXPECT_EQ(count(h, "<g class=\"tl-row"), 2u);
  EXPECT_NE(h.find("First bad step: <b class=\"first-bad-step\">12</b> &mdash; Dropout.forward() always calls functional.dropout()"),
            std::string::npos)
      << h;
  EXPECT_EQ(count(h, "class=\"tl-first\""), 1u);
  EXPECT_NE(h.find("data-step=\"42\""), std::string::npos);
  // The earliest-violated row comes first and is the highlighted one.
  EXPECT_LT(h.find("data-label=\"Dropout"), h.find("data-label=\"late\""));
  EXPECT_NE(h.find("<g class=\"tl-row tl-row-first\" data-label=\"Dropout"), std::string::npos);
  EXPECT_EQ(h.find("<script"), std::string::npos);
}

TEST(ReportTimeline, HundredsOfInvariantsKeepTheEarliestRowsAndSayHowManyMore) {
  std::vector<ViolationSummaryRow> rows;
  for (int i = 0; i < 300; ++i) rows.push_back(row("inv " + std::to_string(i), {300 - i}));
  const std::string h = render_violation_timeline(rows, 25);
  EXPECT_EQ(count(h, "<g class=\"tl-row"), 25u);
  EXPECT_EQ(count(h, "class=\"tl-mark\""), 25u);
  EXPECT_NE(h.find("Showing the 25 earliest-violated of 300 invariants; 275 more are in the table below."), std::string::npos) << h;
  EXPECT_NE(h.find("data-label=\"inv 299\""), std::string::npos);  // step 1, the earliest
  EXPECT_EQ(h.find("data-label=\"inv 0\""), std::string::npos);    // step 300, not shown
}

TEST(ReportTimeline, LabelsAreEscapedAndShortenedOnCharacterBoundaries) {
  std::string long_label = "f(): output[0].x ";
  for (int i = 0; i < 60; ++i) long_label += "\u2264";  // 3-byte UTF-8
  const std::string h = render_violation_timeline({row("<img src=x onerror='1'>", {1}), row(long_label, {2})});
  EXPECT_EQ(h.find("<img"), std::string::npos);
  EXPECT_NE(h.find("&lt;img src=x onerror=&#39;1&#39;&gt;"), std::string::npos);
  // The visible label is cut to 48 characters and an ellipsis; the hover title keeps it whole.
  std::string cut = "f(): output[0].x ";
  for (int i = 0; i < 48 - 17; ++i) cut += "\u2264";
  EXPECT_NE(h.find(">" + cut + "\u2026</text>"), std::string::npos) << h;
  EXPECT_NE(h.find("<title>" + long_label + " \u2014 step 2</title>"), std::string::npos);
}

TEST(ReportTimeline, NoStepNoTimeline) {
  EXPECT_NE(render_violation_timeline({}).find("No violations."), std::string::npos);
  const std::string h = render_violation_timeline({row("stepless", {})});
  EXPECT_NE(h.find("No violating record has a step"), std::string::npos);
  EXPECT_EQ(h.find("<svg"), std::string::npos);
  // Mixed: the stepless one is counted in a note, not drawn.
  const std::string mixed = render_violation_timeline({row("stepless", {}), row("stepped", {3})});
  EXPECT_EQ(count(mixed, "<g class=\"tl-row"), 1u);
  EXPECT_NE(mixed.find("1 violated invariant has no step and no row."), std::string::npos) << mixed;
}
