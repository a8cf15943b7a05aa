#include "check/process_summaries.h"

#include <gtest/gtest.h>

#include "trace/json_parse.h"

namespace traincheck {
namespace {

ProcessViolationRow row(std::string identity, std::string label, std::optional<int64_t> first, std::optional<int64_t> last,
                        uint64_t count) {
  return {std::move(identity), ViolationSummaryRow{std::move(label), "APIContainRelation", "", first, last, count, {}}};
}

// A summary_<pid>.json as the in-process checker writes it, reduced to the field merged here.
Value summary_of(const std::vector<ProcessViolationRow>& rows) {
  return make_object({{"violations", Value::integer(1)}, {"violation_summary", process_violation_rows_value(rows)}});
}

TEST(ProcessSummaries, OneInvariantViolatedInTwoProcessesIsOneRowSpanningBoth) {
  const std::vector<Value> summaries = {summary_of({row("inv-a", "A() always calls B()", 4, 6, 3)}),
                                        summary_of({row("inv-a", "A() always calls B()", 2, 5, 2)})};
  const std::vector<ViolationSummaryRow> rows = merge_process_summaries(summaries);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].label, "A() always calls B()");
  EXPECT_EQ(rows[0].relation, "APIContainRelation");
  EXPECT_EQ(rows[0].first_step, 2);
  EXPECT_EQ(rows[0].last_step, 6);
  EXPECT_EQ(rows[0].count, 5u);
}

TEST(ProcessSummaries, DistinctInvariantsStayApartEarliestFirstStepFirstAndUnknownStepsLast) {
  const std::vector<Value> summaries = {
      summary_of({row("inv-late", "late", 9, 9, 1), row("inv-nostep", "no step", std::nullopt, std::nullopt, 4)}),
      summary_of({row("inv-early", "early", 1, 3, 2)})};
  const std::vector<ViolationSummaryRow> rows = merge_process_summaries(summaries);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].label, "early");
  EXPECT_EQ(rows[1].label, "late");
  EXPECT_EQ(rows[2].label, "no step");
  EXPECT_FALSE(rows[2].first_step.has_value());
}

TEST(ProcessSummaries, SummariesWithoutRowsAndMalformedRowsAreSkipped) {
  Value old_collector = make_object({{"violations", Value::integer(3)}});
  Value malformed = make_object({{"violation_summary", Value::array({Value::integer(1), make_object({{"label", Value::string("x")}})})}});
  const std::vector<Value> summaries = {old_collector, malformed, Value::string("not an object"),
                                        summary_of({row("inv-a", "a", 2, 2, 1)})};
  const std::vector<ViolationSummaryRow> rows = merge_process_summaries(summaries);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].label, "a");
}

TEST(ProcessSummaries, TableFromSummaryTextsSkipsTextThatIsNotJsonAndIsEmptyWithoutViolations) {
  std::string text;
  append_value_json(text, summary_of({row("inv-a", "Optimizer.step() always calls functional.adam()", 4, 4, 1)}), JsonStyle::Indented, 2);
  const std::string table = format_run_violation_table({text, "{truncated"}, 20);
  EXPECT_NE(table.find("first step"), std::string::npos);
  EXPECT_NE(table.find("Optimizer.step() always calls functional.adam()"), std::string::npos);
  EXPECT_NE(table.find("         4          4           1  "), std::string::npos) << table;
  std::string clean;
  append_value_json(clean, summary_of({}), JsonStyle::Indented, 2);
  EXPECT_EQ(format_run_violation_table({clean}, 20), "");
  EXPECT_EQ(format_run_violation_table({}, 20), "");
}

}  // namespace
}  // namespace traincheck
