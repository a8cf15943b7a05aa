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

// Trust order: a pack's invariant held on more corpus programs is more trusted and comes first, before
// earlier steps; invariants not from a pack (no programs) keep the step order among themselves.
TEST(ViolationSummary, TheMostTrustedViolationComesFirstThenTheEarliest) {
  std::vector<ViolationSummaryRow> rows = {row("inferred early", 1, 1, 1), row("pack 8 late", 9, 9, 1),
                                           row("pack 20 later", 12, 12, 1), row("inferred late", 5, 5, 1)};
  rows[1].held_on_programs = 8;
  rows[2].held_on_programs = 20;
  sort_by_first_step(rows);
  std::vector<std::string> order;
  for (const auto& r : rows) order.push_back(r.label);
  EXPECT_EQ(order, (std::vector<std::string>{"pack 20 later", "pack 8 late", "inferred early", "inferred late"}));
}

TEST(ViolationSummary, TrustTextNamesProgramsAndExamplesItKnows) {
  EXPECT_EQ(trust_text(8, 120), "held on 8 programs, 120 examples");
  EXPECT_EQ(trust_text(1, 1), "held on 1 program, 1 example");
  EXPECT_EQ(trust_text(std::nullopt, 3), "held on 3 examples");
  EXPECT_EQ(trust_text(std::nullopt, std::nullopt), "");
  // The console table says it for a pack's invariant only.
  std::vector<ViolationSummaryRow> rows = {row("A() calls B()", 3, 3, 1), row("C() calls D()", 4, 4, 1)};
  rows[0].held_on_programs = 8;
  rows[0].examples = 120;
  rows[1].examples = 7;
  const std::string text = format_violation_summary(rows, 10, "");
  EXPECT_NE(text.find("A() calls B() (held on 8 programs, 120 examples)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("C() calls D()\n"), std::string::npos) << text;
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
