// BlockList (common/block_list.h): elements never move as the list grows, a cleared or destroyed list's
// blocks go to the pool (at most its bound) and the next list takes them, and what is pushed over a
// pooled block's old element is the new value.
#include "common/block_list.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

using namespace traincheck;

namespace {

using List = BlockList<std::string, 4>;

std::string text(int i) { return "element " + std::to_string(i) + " of a list long enough to leave the small-string buffer"; }

}  // namespace

TEST(BlockList, ElementsNeverMoveAsTheListGrows) {
  List::Pool pool(8);
  List list(pool);
  std::vector<const std::string*> addresses;
  for (int i = 0; i < 37; ++i) addresses.push_back(&list.push_back(text(i)));
  ASSERT_EQ(list.size(), 37u);
  for (int i = 0; i < 37; ++i) {
    EXPECT_EQ(&list[static_cast<size_t>(i)], addresses[static_cast<size_t>(i)]);
    EXPECT_EQ(list[static_cast<size_t>(i)], text(i));
  }
  EXPECT_EQ(list.back(), text(36));
  int seen = 0;
  for (const std::string& s : list) EXPECT_EQ(s, text(seen++));
  EXPECT_EQ(seen, 37);
}

TEST(BlockList, AClearedListsBlocksAreTakenByTheNextListAndHoldItsValues) {
  List::Pool pool(8);
  std::vector<const std::string*> first;
  {
    List list(pool);
    for (int i = 0; i < 12; ++i) first.push_back(&list.push_back(text(i)));  // 3 full blocks of 4
  }
  EXPECT_EQ(pool.size(), 3u);
  List next(pool);
  for (int i = 100; i < 112; ++i) next.push_back(text(i));
  EXPECT_EQ(pool.size(), 0u);
  // Its elements are in the first list's blocks (the order blocks come back in is the pool's), and
  // hold the new values, not the old ones.
  std::vector<const std::string*> reused;
  for (const std::string& s : next) reused.push_back(&s);
  for (const std::string* a : first) EXPECT_NE(std::find(reused.begin(), reused.end(), a), reused.end());
  for (int i = 0; i < 12; ++i) EXPECT_EQ(next[static_cast<size_t>(i)], text(100 + i));
  next.clear();
  EXPECT_TRUE(next.empty());
  EXPECT_EQ(pool.size(), 3u);
}

TEST(BlockList, ThePoolKeepsAtMostItsBoundAndAMovedListKeepsItsElements) {
  List::Pool pool(2);
  List list(pool);
  for (int i = 0; i < 20; ++i) list.push_back(text(i));  // 5 blocks
  const std::string* third = &list[2];
  List moved(std::move(list));
  EXPECT_EQ(moved.size(), 20u);
  EXPECT_EQ(&moved[2], third);
  EXPECT_TRUE(list.empty());  // NOLINT(bugprone-use-after-move): a moved-from list is empty
  moved.clear();
  EXPECT_EQ(pool.size(), 2u);  // the other 3 blocks freed
}
