#include "check/report/final_step_counts.h"

#include <gtest/gtest.h>

namespace traincheck {
namespace {

using Counts = std::vector<std::pair<int64_t, int64_t>>;

TEST(FinalStepCounts, StepsBelowTheLatestAreHandedOutAndTheLatestWaitsForALaterOneOrTheEnd) {
  FinalStepCounts steps;
  EXPECT_EQ(steps.take({{3, 1}}, false), Counts{});
  EXPECT_EQ(steps.take({{3, 1}, {4, 2}, {7, 1}}, false), (Counts{{3, 1}, {4, 2}}));
  EXPECT_EQ(steps.take({{3, 1}, {4, 2}, {7, 1}}, true), (Counts{{7, 1}}));
  EXPECT_EQ(steps.take({{3, 1}, {4, 2}, {7, 1}}, true), Counts{});
}

TEST(FinalStepCounts, AStepHandedOutIsNeverHandedOutAgainEvenWhenItsCountGrows) {
  FinalStepCounts steps;
  EXPECT_EQ(steps.take({{2, 1}, {5, 1}}, false), (Counts{{2, 1}}));
  // A late violation at step 2 (another thread's records) counts in the final summary only.
  EXPECT_EQ(steps.take({{2, 3}, {5, 1}, {6, 1}}, false), (Counts{{5, 1}}));
}

TEST(FinalStepCounts, NoViolationHandsOutNothing) {
  FinalStepCounts steps;
  EXPECT_EQ(steps.take({}, false), Counts{});
  EXPECT_EQ(steps.take({}, true), Counts{});
}

}  // namespace
}  // namespace traincheck
