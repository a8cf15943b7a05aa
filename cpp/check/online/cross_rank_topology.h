// Which ranks a rank compares with, chosen from the job's shape (docs/analysis.md §Cross-rank checking
// in-process, "Which ranks"): no setting is needed for the exchange to stay cheap at any world size.
//
// Equality is transitive: any connected graph of pairwise comparisons (a ring, a star) proves every
// replica equal, so no default compares all pairs beyond a handful of ranks.
//
// The rule (plan_cross_rank):
// - `peers` > 0 (TRAINCHECK_CROSS_RANK_PEERS): the next `peers` ranks of the ring, as the user asked;
// - world ≤ kAllPairsMaxWorld: every other rank (at most 7 peers: a few store calls a rank and step);
// - the checks judge a step by digest (OnlineChecker::peer_steps_by_digest) and the job's ranks form
//   nodes of equal size (LOCAL_WORLD_SIZE): per node. The ranks of a node compare every pair through a
//   node-local store (file_peer_store.h) and their node's leader (local rank 0) publishes one fold (its
//   step digest) per step to the job's store, compared against the step's first fold (node_fold_exchange.h):
//   the job's store serves about one call per node and step;
// - otherwise (checks that pair variables across names need the records of every step, or an unknown
//   node shape): the ring, each rank comparing with the next one.
#pragma once

#include <string>
#include <vector>

namespace traincheck {

inline constexpr int kAllPairsMaxWorld = 8;

enum class CrossRankMode { AllPairs, Ring, PerNode };

// Where a rank sits in the job: its rank and the world size (the job's store tells them), and its node's
// shape from the launcher (torchrun: LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK); local_world 0: unknown.
struct CrossRankLayout {
  int rank = 0;
  int world = 1;
  int local_rank = -1;
  int local_world = 0;
  int node = -1;  // -1: rank / local_world
};

struct CrossRankPlan {
  CrossRankMode mode = CrossRankMode::AllPairs;
  // AllPairs, Ring: global ranks. PerNode: the other local ranks of this node (local numbering).
  std::vector<int> peers;
  int node = 0, nodes = 1;  // PerNode: this rank's node and the number of nodes
  int local_rank = 0, local_world = 1;
  bool leader = false;  // PerNode: this rank publishes its node's fold
  std::string description;  // one line: what was chosen and why
};

// `peers_setting`: TRAINCHECK_CROSS_RANK_PEERS (0: unset). `by_digest`: whether the checks judge a step by
// digest, without its records.
CrossRankPlan plan_cross_rank(const CrossRankLayout& layout, int peers_setting, bool by_digest);

const char* mode_name(CrossRankMode mode);

}  // namespace traincheck
