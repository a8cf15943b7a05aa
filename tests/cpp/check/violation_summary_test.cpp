// The violation summary rows (first step, last step, count per invariant) and the console table that
// traincheck-check and -onlinecheck print from them.
#include "check/violation_summary.h"

#include <gtest/gtest.h>

using namespace traincheck;

namespace {

ViolationSummaryRow row(std::string label, std::optional<int64_t> first, std::optional<int64_t> last, uint64_t count) {
  ViolationSummaryRow r;
  r.label = std::move(label);
  r.relation = "APIContainRelation";
  r.first_step = first;
  r.last_step = last;
  r.count = count;
  return r;
}

}  // namespace

TEST(ViolationSummary, RowsSortByFirstStepThenCountAndStepLessRowsLast) {
  std::vector<ViolationSummaryRow> rows = {row("no step", std::nullopt, std::nullopt, 9), row("late", 7, 9, 3),
                                           row("early few", 2, 2, 1), row("early many", 2, 5, 4)};
  sort_by_first_step(rows);
  std::vector<std::string> order;
  for (const auto& r : rows) order.push_back(r.label);
  EXPECT_EQ(order, (std::vector<std::string>{"early many", "early few", "late", "no step"}));
  EXPECT_EQ(first_violation_step(rows), 2);
  EXPECT_EQ(first_violation_step({row("no step", std::nullopt, std::nullopt, 1)}), std::nullopt);
}

TEST(ViolationSummary, ConsoleTableHasFirstLastAndCountPerInvariant) {
  std::vector<ViolationSummaryRow> rows = {row("Dropout.forward() always calls functional.dropout()", 3, 9, 7),
                                           row("Optimizer.step() always follows zero_grad()", std::nullopt, std::nullopt, 1)};
  rows[1].trace = "run2";
  const std::string text = format_violation_summary(rows, 10);
  EXPECT_EQ(text,
            "  first step  last step  violations  invariant\n"
            "           3          9           7  Dropout.forward() always calls functional.dropout()\n"
            "           -          -           1  Optimizer.step() always follows zero_grad() [run2]\n");
  // Past max_rows: how many more.
  const std::string cut = format_violation_summary(rows, 1, "");
  EXPECT_NE(cut.find("... and 1 more violated invariants\n"), std::string::npos) << cut;
  EXPECT_EQ(cut.find("zero_grad"), std::string::npos) << cut;
}
