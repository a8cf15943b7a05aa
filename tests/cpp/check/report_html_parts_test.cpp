// HTML escaping of everything a report shows from traces and invariants (a value with a quote
// must not end an attribute, whichever quote the attribute uses).
#include "check/report/report_html_parts.h"

#include <gtest/gtest.h>

#include <algorithm>

using traincheck::report_parts::esc;

TEST(ReportHtmlParts, EscEscapesMarkupAndBothQuotes) {
  EXPECT_EQ(esc("<script>alert('x')</script>"), "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;");
  EXPECT_EQ(esc("a & \"b\""), "a &amp; &quot;b&quot;");
  EXPECT_EQ(esc("plain text 1.0"), "plain text 1.0");
}

namespace {

traincheck::report_parts::ViolationTableRow table_row(std::string label, std::optional<int64_t> first, uint64_t count) {
  traincheck::ViolationSummaryRow row;
  row.label = std::move(label);
  row.relation = "APIContainRelation";
  row.trace = "t";
  row.first_step = first;
  row.last_step = first;
  row.count = count;
  if (first) row.steps = {*first};
  return {row, "description <b>", {}};
}

}  // namespace

// Both report modes draw their violations table here: rows in the order of the console table and
// violations_summary.json (earliest first step, then more violations, then label; no step last), with
// a Trace column only when asked for, and escaped text.
TEST(ReportHtmlParts, ViolationsTableOrdersRowsAsEveryOtherTable) {
  using traincheck::report_parts::violations_table;
  const std::string html = violations_table({table_row("no step", std::nullopt, 9), table_row("b late", 7, 1),
                                             table_row("z early few", 2, 1), table_row("a early few", 2, 1),
                                             table_row("early many", 2, 5)},
                                            true);
  std::vector<size_t> at;
  for (const char* label : {"early many", "a early few", "z early few", "b late", "no step"}) at.push_back(html.find(label));
  EXPECT_TRUE(std::is_sorted(at.begin(), at.end())) << html;
  EXPECT_EQ(std::count(at.begin(), at.end(), std::string::npos), 0);
  EXPECT_NE(html.find("<th>Trace</th>"), std::string::npos);
  EXPECT_NE(html.find("description &lt;b&gt;"), std::string::npos);
  const std::string online = violations_table({table_row("x", 1, 1)}, false);
  EXPECT_EQ(online.find("<th>Trace</th>"), std::string::npos);
  EXPECT_EQ(violations_table({}, false), "<p>No violations.</p>");
}
