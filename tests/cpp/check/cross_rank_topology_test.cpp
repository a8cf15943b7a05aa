// Which ranks a rank compares with, from the job's shape alone: all pairs up to a handful of ranks, then
// per node where the checks judge steps by digest and the nodes are regular, else the ring; a setting of
// peers always wins.
#include "check/online/cross_rank_topology.h"

#include <gtest/gtest.h>

using namespace traincheck;

namespace {

CrossRankLayout layout(int rank, int world, int local_world = 0, int local_rank = -1, int node = -1) {
  return CrossRankLayout{rank, world, local_rank, local_world, node};
}

}  // namespace

TEST(CrossRankTopology, AHandfulOfRanksComparesEveryPair) {
  const CrossRankPlan two = plan_cross_rank(layout(1, 2), 0, true);
  EXPECT_EQ(two.mode, CrossRankMode::AllPairs);
  EXPECT_EQ(two.peers, std::vector<int>({0}));
  const CrossRankPlan eight = plan_cross_rank(layout(3, 8, 8, 3), 0, true);
  EXPECT_EQ(eight.mode, CrossRankMode::AllPairs);
  EXPECT_EQ(eight.peers, std::vector<int>({0, 1, 2, 4, 5, 6, 7}));
  EXPECT_NE(eight.description.find("all pairs"), std::string::npos);
}

TEST(CrossRankTopology, BeyondAHandfulRegularNodesCompareWithinTheNodeAndOneLeaderPublishesItsFold) {
  // 256 ranks, 32 nodes of 8: rank 77 is local rank 5 of node 9.
  const CrossRankPlan p = plan_cross_rank(layout(77, 256, 8, 5), 0, true);
  EXPECT_EQ(p.mode, CrossRankMode::PerNode);
  EXPECT_EQ(p.node, 9);
  EXPECT_EQ(p.nodes, 32);
  EXPECT_EQ(p.local_rank, 5);
  EXPECT_FALSE(p.leader);
  EXPECT_EQ(p.peers, std::vector<int>({0, 1, 2, 3, 4, 6, 7}));  // local ranks of its node
  EXPECT_NE(p.description.find("32 nodes of 8"), std::string::npos) << p.description;
  EXPECT_TRUE(plan_cross_rank(layout(72, 256, 8, 0), 0, true).leader);
  // GROUP_RANK, when the launcher gives it, names the node.
  EXPECT_EQ(plan_cross_rank(layout(77, 256, 8, 5, 9), 0, true).mode, CrossRankMode::PerNode);
}

TEST(CrossRankTopology, LargeNodesCompareInARingWithinTheNode) {
  const CrossRankPlan p = plan_cross_rank(layout(40, 64, 32, 8), 0, true);
  EXPECT_EQ(p.mode, CrossRankMode::PerNode);
  EXPECT_EQ(p.peers, std::vector<int>({9}));
}

TEST(CrossRankTopology, WithoutDigestsOrRegularNodesTheRingIsTheDefault) {
  // The original's DDP invariant pairs variables across names: every step's records are needed.
  const CrossRankPlan no_digest = plan_cross_rank(layout(255, 256, 8, 7), 0, false);
  EXPECT_EQ(no_digest.mode, CrossRankMode::Ring);
  EXPECT_EQ(no_digest.peers, std::vector<int>({0}));
  EXPECT_NE(no_digest.description.find("across names"), std::string::npos);
  // No node shape, one that does not divide the world, or one the ranks do not follow.
  EXPECT_EQ(plan_cross_rank(layout(5, 16), 0, true).mode, CrossRankMode::Ring);
  EXPECT_EQ(plan_cross_rank(layout(5, 18, 4, 1), 0, true).mode, CrossRankMode::Ring);
  EXPECT_EQ(plan_cross_rank(layout(5, 16, 4, 2, 1), 0, true).mode, CrossRankMode::Ring);
  EXPECT_EQ(plan_cross_rank(layout(5, 16, 4, 1), 0, true).peers.size(), 3u);  // and the regular one is per node
}

TEST(CrossRankTopology, ASettingOfPeersIsTheRingItAsksFor) {
  const CrossRankPlan p = plan_cross_rank(layout(254, 256, 8, 6), 3, true);
  EXPECT_EQ(p.mode, CrossRankMode::Ring);
  EXPECT_EQ(p.peers, std::vector<int>({0, 1, 255}));
  EXPECT_EQ(plan_cross_rank(layout(0, 2), 5, true).peers, std::vector<int>({1}));
}
