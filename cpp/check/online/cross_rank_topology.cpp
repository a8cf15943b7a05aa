#include "check/online/cross_rank_topology.h"

#include <algorithm>

namespace traincheck {

const char* mode_name(CrossRankMode mode) {
  switch (mode) {
    case CrossRankMode::AllPairs: return "all pairs";
    case CrossRankMode::Ring: return "ring";
    case CrossRankMode::PerNode: return "per node";
  }
  return "?";
}

namespace {

// The next `k` ranks after `rank` in a ring of `n`, sorted.
std::vector<int> ring_peers(int rank, int n, int k) {
  std::vector<int> peers;
  for (int i = 1; i <= std::min(k, n - 1); ++i) peers.push_back((rank + i) % n);
  std::sort(peers.begin(), peers.end());
  return peers;
}

// Whether the launcher's node shape is one we can trust: nodes of local_world ranks numbered
// node * local_world + local_rank (torchrun's, for a homogeneous job).
bool regular_nodes(const CrossRankLayout& l, int node) {
  return l.local_world > 0 && l.world % l.local_world == 0 && l.local_rank >= 0 && l.local_rank < l.local_world &&
         node >= 0 && l.rank == node * l.local_world + l.local_rank;
}

}  // namespace

CrossRankPlan plan_cross_rank(const CrossRankLayout& l, int peers_setting, bool by_digest) {
  CrossRankPlan plan;
  const int n = l.world;
  const std::string ranks = std::to_string(n) + " ranks";
  if (peers_setting > 0) {
    plan.mode = CrossRankMode::Ring;
    plan.peers = ring_peers(l.rank, n, peers_setting);
    plan.description = ranks + ": ring, each rank compares with the next " + std::to_string(plan.peers.size()) +
                       " (TRAINCHECK_CROSS_RANK_PEERS)";
    return plan;
  }
  if (n <= kAllPairsMaxWorld) {
    plan.mode = CrossRankMode::AllPairs;
    plan.peers = ring_peers(l.rank, n, n - 1);
    plan.description = ranks + ": all pairs (at most " + std::to_string(kAllPairsMaxWorld) + " ranks)";
    return plan;
  }
  const int node = l.node >= 0 ? l.node : (l.local_world > 0 ? l.rank / l.local_world : -1);
  if (by_digest && regular_nodes(l, node)) {
    plan.mode = CrossRankMode::PerNode;
    plan.node = node;
    plan.nodes = n / l.local_world;
    plan.local_rank = l.local_rank;
    plan.local_world = l.local_world;
    plan.leader = l.local_rank == 0;
    // Every pair of a node (a node-local store is cheap), a ring beyond a handful.
    const int local_peers = l.local_world <= kAllPairsMaxWorld ? l.local_world - 1 : 1;
    plan.peers = ring_peers(l.local_rank, l.local_world, local_peers);
    plan.description = ranks + ": per node, " + std::to_string(plan.nodes) + " nodes of " + std::to_string(l.local_world) +
                       " (" + (local_peers == l.local_world - 1 ? "all pairs" : "a ring") +
                       " within a node through a node-local store; each node's leader publishes one fold per step "
                       "to the job's store and fetches a node's records only where folds differ)";
    return plan;
  }
  plan.mode = CrossRankMode::Ring;
  plan.peers = ring_peers(l.rank, n, 1);
  plan.description = ranks + ": ring, each rank compares with the next one (" +
                     (by_digest ? "LOCAL_WORLD_SIZE and LOCAL_RANK do not describe nodes of equal size"
                                : "an invariant pairs variables across names, so every step's records are needed") +
                     ")";
  return plan;
}

}  // namespace traincheck
