#include "invariant/example_groups.h"

#include <gtest/gtest.h>

#include <vector>

namespace traincheck {
namespace {

std::vector<uint32_t> group(const ExampleGroups& g, size_t i) { return {g[i].begin(), g[i].end()}; }

TEST(ExampleGroups, OneGroupOfUpToTwoRecordsIsHeldInline) {
  const ExampleGroups one = {{7}};
  const ExampleGroups two = {{7, 9}};
  EXPECT_TRUE(one.is_inline());
  EXPECT_TRUE(two.is_inline());
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(group(one, 0), std::vector<uint32_t>({7}));
  EXPECT_EQ(group(two, 0), std::vector<uint32_t>({7, 9}));
}

TEST(ExampleGroups, OtherShapesKeepEveryGroupAndRecordInOrder) {
  const ExampleGroups three = {{3, 1, 2}};
  const ExampleGroups pair_of_groups = {{5}, {6, 8}};
  EXPECT_FALSE(three.is_inline());
  EXPECT_EQ(group(three, 0), std::vector<uint32_t>({3, 1, 2}));
  ASSERT_EQ(pair_of_groups.size(), 2u);
  EXPECT_EQ(group(pair_of_groups, 0), std::vector<uint32_t>({5}));
  EXPECT_EQ(group(pair_of_groups, 1), std::vector<uint32_t>({6, 8}));
  const ExampleGroups from_vectors(std::vector<std::vector<uint32_t>>{{1}, {}, {4}});
  ASSERT_EQ(from_vectors.size(), 3u);
  EXPECT_TRUE(from_vectors[1].empty());
}

TEST(ExampleGroups, EmptyHasNoGroups) {
  const ExampleGroups none;
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(ExampleGroups(std::vector<std::vector<uint32_t>>{}).size(), 0u);
  const ExampleGroups one_empty_group = {{}};
  ASSERT_EQ(one_empty_group.size(), 1u);
  EXPECT_TRUE(one_empty_group[0].empty());
}

TEST(ExampleGroups, CopiesAreIndependentOfTheOriginal) {
  ExampleGroups spilled = {{1, 2, 3}};
  ExampleGroups copy = spilled;
  spilled = {{9}};
  EXPECT_EQ(group(copy, 0), std::vector<uint32_t>({1, 2, 3}));
  EXPECT_EQ(group(spilled, 0), std::vector<uint32_t>({9}));
  ExampleGroups assigned;
  assigned = copy;
  copy = ExampleGroups{};
  EXPECT_EQ(group(assigned, 0), std::vector<uint32_t>({1, 2, 3}));
  ExampleGroups moved = std::move(assigned);
  EXPECT_EQ(group(moved, 0), std::vector<uint32_t>({1, 2, 3}));
}

// The heap copy shares its 8 bytes with the inline records: moves hand it over whole and leave the
// source empty, whichever shapes meet.
TEST(ExampleGroups, MovesHandOverEitherShapeAndLeaveTheSourceEmpty) {
  ExampleGroups spilled = {{1, 2, 3}};
  ExampleGroups other_spilled = {{4}, {5}};
  other_spilled = std::move(spilled);
  EXPECT_TRUE(spilled.empty());
  EXPECT_EQ(group(other_spilled, 0), std::vector<uint32_t>({1, 2, 3}));
  ExampleGroups inline_one = {{7, 8}};
  other_spilled = std::move(inline_one);
  EXPECT_TRUE(other_spilled.is_inline());
  EXPECT_EQ(group(other_spilled, 0), std::vector<uint32_t>({7, 8}));
  ExampleGroups again = {{9, 9, 9}};
  ExampleGroups target = {{6}};
  target = std::move(again);
  EXPECT_FALSE(target.is_inline());
  EXPECT_EQ(group(target, 0), std::vector<uint32_t>({9, 9, 9}));
  std::vector<ExampleGroups> grown;
  for (uint32_t i = 0; i < 100; ++i) grown.push_back(i % 2 ? ExampleGroups{{i}} : ExampleGroups{{i, i, i}});
  EXPECT_EQ(group(grown[98], 0), std::vector<uint32_t>({98, 98, 98}));
  EXPECT_EQ(group(grown[99], 0), std::vector<uint32_t>({99}));
}

}  // namespace
}  // namespace traincheck
