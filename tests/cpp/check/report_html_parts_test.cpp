// HTML escaping of everything a report shows from traces and invariants (issue 13: a value with a quote
// must not end an attribute, whichever quote the attribute uses).
#include "check/report/report_html_parts.h"

#include <gtest/gtest.h>

using traincheck::report_parts::esc;

TEST(ReportHtmlParts, EscEscapesMarkupAndBothQuotes) {
  EXPECT_EQ(esc("<script>alert('x')</script>"), "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;");
  EXPECT_EQ(esc("a & \"b\""), "a &amp; &quot;b&quot;");
  EXPECT_EQ(esc("plain text 1.0"), "plain text 1.0");
}
