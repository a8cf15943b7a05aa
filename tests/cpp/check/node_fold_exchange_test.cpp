// Nodes' leaders compare one fold per step through the job's store: the first fold of a step is its
// reference, an equal fold costs one store call and no records, a differing one fetches the reference's
// summary; the reference's keys are deleted after the window, and a summary the store lost is counted,
// never waited for.
#include "check/online/node_fold_exchange.h"

#include <gtest/gtest.h>

#include <memory>

#include "testing/memory_peer_store.h"

using namespace traincheck;
using traincheck::testing::MemoryPeerStore;
using traincheck::testing::MemoryStoreData;

namespace {

struct Leaders {
  std::shared_ptr<MemoryStoreData> data = std::make_shared<MemoryStoreData>();
  std::vector<std::unique_ptr<MemoryPeerStore>> stores;
  std::vector<std::unique_ptr<NodeFoldExchange>> folds;
  explicit Leaders(std::vector<int> ranks, int64_t keep_steps = 4) {
    for (int r : ranks) {
      stores.push_back(std::make_unique<MemoryPeerStore>(data, PeerGroup{r, 64}));
      folds.push_back(std::make_unique<NodeFoldExchange>(*stores.back(), r, keep_steps));
    }
  }
  uint64_t ops() {
    std::lock_guard<std::mutex> lock(data->mutex);
    return data->ops;
  }
  std::vector<NodeFoldExchange::Got> poll(size_t i) {
    std::optional<std::string> failure;
    std::vector<NodeFoldExchange::Got> got = folds[i]->poll(failure);
    EXPECT_FALSE(failure) << *failure;
    return got;
  }
};

}  // namespace

TEST(NodeFoldExchange, AnEqualFoldCostsOneCallAndADifferingOneFetchesTheReferencesRecords) {
  Leaders l({0, 4, 8});
  l.folds[0]->publish(1, 0x77, 100, "summary of rank 0", true);
  EXPECT_EQ(l.ops(), 2u);  // its fold, then its summary: it is the step's reference
  l.folds[1]->publish(1, 0x77, 104, "summary of rank 4", true);
  EXPECT_EQ(l.ops(), 3u);
  l.folds[2]->publish(1, 0x99, 108, "summary of rank 8", true);
  EXPECT_EQ(l.ops(), 4u);

  EXPECT_TRUE(l.poll(0).empty());  // the reference compares with no one
  const auto matched = l.poll(1);
  ASSERT_EQ(matched.size(), 1u);
  EXPECT_EQ(matched[0].step, 1);
  EXPECT_EQ(matched[0].rank, 0);
  EXPECT_EQ(matched[0].matched_process, std::optional<int64_t>(100));
  EXPECT_TRUE(matched[0].text.empty());
  const auto differing = l.poll(2);
  ASSERT_EQ(differing.size(), 1u);
  EXPECT_EQ(differing[0].rank, 0);
  EXPECT_FALSE(differing[0].matched_process);
  EXPECT_EQ(differing[0].text, "summary of rank 0");
  EXPECT_EQ(l.folds[2]->stats().folds_differing, 1u);
  EXPECT_EQ(l.folds[1]->stats().folds_matched, 1u);
  EXPECT_EQ(l.folds[0]->stats().references_published, 1u);
  EXPECT_TRUE(l.poll(2).empty());  // each once
}

TEST(NodeFoldExchange, AnEqualFoldThatMissesALateRecordStillFetchesTheRecords) {
  Leaders l({0, 4});
  l.folds[0]->publish(3, 0x5, 100, "r0", true);
  l.folds[1]->publish(3, 0x5, 104, "r4", /*trusted=*/false);
  const auto got = l.poll(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].text, "r0");
}

TEST(NodeFoldExchange, TheReferenceDeletesItsKeysAfterTheWindow) {
  Leaders l({0, 4}, /*keep_steps=*/2);
  for (int64_t step = 1; step <= 6; ++step) {
    l.folds[0]->publish(step, 0x10 + step, 100, "r0", true);
    l.folds[1]->publish(step, 0x10 + step, 104, "r4", true);
  }
  std::lock_guard<std::mutex> lock(l.data->mutex);
  std::set<std::string> keys;
  for (const auto& [k, v] : l.data->values) keys.insert(k);
  EXPECT_EQ(keys, std::set<std::string>({"fold/s5", "fold/s6", "ref/s5", "ref/s6"}));
}

TEST(NodeFoldExchange, AReferenceTheStoreLostIsCountedAndGivenUpNeverWaitedFor) {
  Leaders l({0, 4}, /*keep_steps=*/3);
  l.folds[0]->publish(1, 0x1, 100, "r0", true);
  {
    std::lock_guard<std::mutex> lock(l.data->mutex);
    l.data->values.erase("ref/s1");  // dropped by the store
  }
  l.folds[1]->publish(1, 0x2, 104, "r4", true);
  EXPECT_TRUE(l.poll(1).empty());
  EXPECT_EQ(l.folds[1]->pending(), 1u);  // it may still come
  for (int64_t step = 2; step <= 4; ++step) {
    l.folds[0]->publish(step, 0x1, 100, "r0", true);
    l.folds[1]->publish(step, 0x1, 104, "r4", true);
  }
  EXPECT_EQ(l.poll(1).size(), 3u);  // steps 2-4 matched; step 1 given up
  EXPECT_EQ(l.folds[1]->pending(), 0u);
  EXPECT_EQ(l.folds[1]->stats().references_missing, 1u);
}

TEST(NodeFoldExchange, AFailingStoreKeepsWhatIsPendingAndSaysWhy) {
  Leaders l({0, 4});
  l.folds[0]->publish(1, 0x1, 100, "r0", true);
  l.folds[1]->publish(1, 0x2, 104, "r4", true);
  l.data->failing = true;
  std::optional<std::string> failure;
  EXPECT_TRUE(l.folds[1]->poll(failure).empty());
  ASSERT_TRUE(failure);
  EXPECT_EQ(*failure, "store unavailable");
  EXPECT_EQ(l.folds[1]->pending(), 1u);
  l.data->failing = false;
  EXPECT_EQ(l.poll(1).size(), 1u);
}

// The reference of a differing step may be a node this one never compared with before: its step before
// is told matched when its fold there was this node's, so the checker knows its values up to then.
TEST(NodeFoldExchange, ADifferingReferencesStepBeforeIsToldMatchedWhenItsFoldWasThisNodes) {
  Leaders l({0, 4});
  l.folds[0]->publish(1, 0x1, 100, "r0 step 1", true);  // rank 0 the reference of step 1
  l.folds[1]->publish(1, 0x1, 104, "r4 step 1", true);
  l.folds[1]->publish(2, 0x2, 104, "r4 step 2", true);  // rank 4 the reference of step 2
  l.folds[0]->publish(2, 0x3, 100, "r0 step 2", true);
  const auto got = l.poll(0);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].step, 1);
  EXPECT_EQ(got[0].rank, 4);
  EXPECT_EQ(got[0].matched_process, std::optional<int64_t>(104));
  EXPECT_EQ(got[1].step, 2);
  EXPECT_EQ(got[1].text, "r4 step 2");
  // Not when the step before differed too.
  l.folds[1]->publish(3, 0x4, 104, "r4 step 3", true);
  l.folds[0]->publish(3, 0x5, 100, "r0 step 3", true);
  const auto later = l.poll(0);
  ASSERT_EQ(later.size(), 1u);
  EXPECT_EQ(later[0].text, "r4 step 3");
}
