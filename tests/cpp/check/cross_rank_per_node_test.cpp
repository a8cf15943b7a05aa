// Per-node cross-rank checking, whole: twelve ranks in three nodes of four, each rank an online session
// fed only its own records, chosen per node by default. Ranks in sync read no peer record and the job's
// store serves about one call per node and step; a rank that diverges inside its node, and a whole node
// that diverges, are each reported with both ranks, the variable and the values; a rank that dies, a
// leader that dies, a leader that never opens its node's channel, a slow node and a failing store are
// reported or turn the exchange off with one line, and never stop the check.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "check/online/cross_rank_exchange.h"
#include "check/online/online_session.h"
#include "cross_rank_session.h"
#include "scratch_dir.h"
#include "testing/memory_peer_store.h"
#include "trace/json_parse.h"

namespace fs = std::filesystem;
using namespace traincheck;
using traincheck::testing::MemoryPeerStore;
using traincheck::testing::MemoryStoreData;

namespace {

constexpr int kWorld = 12, kLocal = 4, kVariables = 3;


// A rank's parameter states at the end of a step; `offset` added to layer 1's value (a divergence).
std::string parameter_states(int rank, int step, int64_t offset = 0) {
  std::string out;
  for (int v = 0; v < kVariables; ++v) {
    const int64_t value = 31 * step + 1000 * v + (v == 1 ? offset : 0);
    out += "{\"type\":\"state_change\",\"var_type\":\"torch.nn.Parameter\",\"var_name\":\"layer" + std::to_string(v) +
           ".weight\",\"process_id\":" + std::to_string(500 + rank) + ",\"thread_id\":1,\"time\":" +
           std::to_string(step * 1000 + rank) + ",\"meta_vars\":{\"step\":" + std::to_string(step) +
           ",\"stage\":\"training\",\"_DATA_PARALLEL_RANK\":" + std::to_string(rank) + "},\"attributes\":{\"data\":" +
           std::to_string(value) + ",\"nbytes\":" + std::to_string(8 * (v + 1)) + "}}\n";
  }
  return out;
}

struct NodeRank : traincheck::testing::SessionRank {
  bool alive = true;
  bool publishes = true;  // false: not waited for (its exchange is off)
};

struct NodeJob {
  fs::path dir;
  std::shared_ptr<MemoryStoreData> store = std::make_shared<MemoryStoreData>();
  std::vector<NodeRank> ranks;

  explicit NodeJob(const std::string& name, CrossRankOptions options = fast_options(), std::set<int> unconnected = {}) {
    dir = scratch::empty_dir("per_node_" + name);
    fs::create_directories(dir / "shm");
    std::ofstream(dir / "inv.json") << traincheck::testing::learned_invariant();
    options.node_root = (dir / "shm").string();
    for (int r = 0; r < kWorld; ++r) {
      CrossRankOptions mine = options;
      mine.local_rank = r % kLocal;
      mine.local_world = kLocal;
      NodeRank rank;
      static_cast<traincheck::testing::SessionRank&>(rank) = traincheck::testing::start_session_rank(
          (dir / "inv.json").string(), (dir / ("online_check_" + std::to_string(r))).string(), store, PeerGroup{r, kWorld}, mine,
          !unconnected.count(r));
      ranks.push_back(std::move(rank));
    }
  }
  static CrossRankOptions fast_options() { return traincheck::testing::fast_cross_rank_options(); }
  // Passes of every live rank until `done` holds (at most about 10 s), then one more.
  template <typename Done>
  void settle(Done&& done) {
    for (int i = 0; i < 2000 && !done(); ++i) {
      for (NodeRank& r : ranks)
        if (r.alive) r.feed("");
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    for (NodeRank& r : ranks)
      if (r.alive) r.feed("");
  }
  // One step on every live rank, `lines(rank)` each; settled once every live rank published the step before.
  template <typename Lines>
  void step(int s, Lines&& lines) {
    for (int r = 0; r < kWorld; ++r)
      if (ranks[r].alive) ranks[r].feed(lines(r));
    settle([&] {
      for (const NodeRank& r : ranks)
        if (r.alive && r.publishes && r.stats().steps_published < static_cast<uint64_t>(s)) return false;
      return true;
    });
  }
  // Every live rank ends at once, as a job's do: each one's final wait overlaps its peers' last steps.
  void close() {
    std::vector<std::thread> ending;
    for (NodeRank& r : ranks)
      if (r.alive) ending.emplace_back([&r] { r.sink.on_close(r.sink.context); });
    for (std::thread& t : ending) t.join();
  }
  uint64_t store_ops() {
    std::lock_guard<std::mutex> lock(store->mutex);
    return store->ops;
  }
  // Every rank's failed.log entries, each as its records' (rank, step, var_name, data).
  struct Seen {
    int64_t rank, step;
    std::string var;
    int64_t data;
  };
  std::vector<std::vector<Seen>> violations() const {
    std::vector<std::vector<Seen>> out;
    for (int r = 0; r < kWorld; ++r) {
      std::ifstream in(dir / ("online_check_" + std::to_string(r)) / "failed.log");
      std::string line, error;
      while (std::getline(in, line)) {
        Value v;
        EXPECT_TRUE(parse_json(line, v, error)) << error;
        std::vector<Seen> records;
        for (const Value& rec : v.find("trace")->as_array())
          records.push_back(Seen{rec.find("meta_vars._DATA_PARALLEL_RANK")->as_int(), rec.find("meta_vars.step")->as_int(),
                                 rec.find("var_name")->as_string(), rec.find("attributes.data")->as_int()});
        out.push_back(records);
      }
    }
    return out;
  }
};

// Whether some violation pairs rank `a` with a rank of `others` at `step`, on the variable that diverged.
bool reported(const std::vector<std::vector<NodeJob::Seen>>& found, int64_t a, const std::set<int64_t>& others, int64_t step) {
  for (const auto& records : found) {
    if (records.size() != 2 || records[0].step != step || records[1].step != step) continue;
    if (records[0].var != "layer1.weight" || records[1].var != "layer1.weight") continue;
    const bool first = records[0].rank == a && others.count(records[1].rank);
    const bool second = records[1].rank == a && others.count(records[0].rank);
    if (first || second) return true;
  }
  return false;
}

}  // namespace

TEST(CrossRankPerNode, RanksInSyncReadNoRecordAndTheJobsStoreServesAboutOneCallPerNodeAndStep) {
  NodeJob job("in_sync");
  constexpr int kSteps = 12;
  job.step(0, [](int r) { return parameter_states(r, 0); });
  job.step(1, [](int r) { return parameter_states(r, 1); });
  const uint64_t before = job.store_ops();
  for (int s = 2; s < kSteps; ++s) job.step(s, [&](int r) { return parameter_states(r, s); });
  const uint64_t per_steps = job.store_ops() - before;
  job.close();
  EXPECT_TRUE(job.violations().empty());
  // Three folds, a reference summary and two deletes a step (node_fold_exchange.h): no rank-wise calls.
  EXPECT_LE(per_steps, static_cast<uint64_t>((kSteps - 2) * (kWorld / kLocal + 3)));
  for (int r = 0; r < kWorld; ++r) {
    const CrossRankStats st = job.ranks[r].stats();
    EXPECT_EQ(st.mode, "per node");
    EXPECT_EQ(st.node, r / kLocal);
    EXPECT_EQ(st.leader, r % kLocal == 0);
    EXPECT_EQ(st.peers.size(), static_cast<size_t>(kLocal - 1));
    EXPECT_EQ(st.records_received, 0u) << "rank " << r;
    EXPECT_EQ(st.store_errors, 0u) << st.last_error;
    if (r % kLocal != 0) EXPECT_LE(st.job_store_calls, 6u) << "rank " << r;  // finding its node's channel only
    else EXPECT_GE(st.folds.folds_published, static_cast<uint64_t>(kSteps - 1));
  }
  // The nodes' channels are gone with their ranks.
  EXPECT_TRUE(fs::is_empty(job.dir / "shm"));
}

TEST(CrossRankPerNode, ARankDivergingInItsNodeIsReportedThereWithTheVariableAndBothValues) {
  NodeJob job("rank_diverges");
  constexpr int kDiverge = 4, kDivergent = 6;  // local rank 2 of node 1
  for (int s = 0; s < 8; ++s)
    job.step(s, [&](int r) { return parameter_states(r, s, r == kDivergent && s == kDiverge ? 17 : 0); });
  job.close();
  const auto found = job.violations();
  EXPECT_TRUE(reported(found, kDivergent, {4, 5, 7}, kDiverge));
  for (const auto& records : found)
    for (const NodeJob::Seen& s : records) {
      EXPECT_EQ(s.step, kDiverge);
      if (s.rank == kDivergent) EXPECT_EQ(s.data, 31 * kDiverge + 1000 + 17);
      else EXPECT_EQ(s.data, 31 * kDiverge + 1000);
    }
  // Nodes 0 and 2 never saw it: their folds matched.
  for (int r : {0, 1, 2, 3, 8, 9, 10, 11}) EXPECT_EQ(job.ranks[r].stats().records_received, 0u) << "rank " << r;
}

TEST(CrossRankPerNode, ANodeDivergingAsAWholeIsReportedThroughItsFold) {
  NodeJob job("node_diverges");
  constexpr int kDiverge = 5;
  for (int s = 0; s < 9; ++s)
    job.step(s, [&](int r) { return parameter_states(r, s, r / kLocal == 2 && s >= kDiverge ? 5 : 0); });
  job.close();
  const auto found = job.violations();
  // Node 2's leader (rank 8) paired with another node's leader, whichever fold the step took first.
  EXPECT_TRUE(reported(found, 8, {0, 4}, kDiverge));
  uint64_t differing = 0;
  for (int r : {0, 4, 8}) differing += job.ranks[r].stats().folds.folds_differing;
  EXPECT_GE(differing, 4u);  // steps 5-8 at least once each
}

TEST(CrossRankPerNode, ARankThatDiesIsReportedByItsNodeWhichKeepsChecking) {
  NodeJob job("rank_dies");
  constexpr int kDead = 6, kDivergent = 5, kDiverge = 8;
  for (int s = 0; s < 12; ++s) {
    if (s == 3) job.ranks[kDead].alive = false;  // killed: nothing more from it
    job.step(s, [&](int r) { return parameter_states(r, s, r == kDivergent && s == kDiverge ? 9 : 0); });
  }
  job.settle([&] { return !job.ranks[4].stats().lagging.empty(); });
  job.close();
  EXPECT_EQ(job.ranks[4].stats().lagging, std::set<int>{kDead});
  EXPECT_TRUE(reported(job.violations(), kDivergent, {4, 7}, kDiverge));
}

TEST(CrossRankPerNode, ALeaderThatDiesLeavesItsNodeCheckingItselfAndTheOtherNodesTheirs) {
  NodeJob job("leader_dies");
  constexpr int kLeader = 4, kDivergent = 7, kDiverge = 8;
  for (int s = 0; s < 12; ++s) {
    if (s == 3) job.ranks[kLeader].alive = false;
    job.step(s, [&](int r) { return parameter_states(r, s, r == kDivergent && s == kDiverge ? 9 : 0); });
  }
  job.settle([&] { return !job.ranks[5].stats().lagging.empty(); });
  job.close();
  EXPECT_EQ(job.ranks[5].stats().lagging, std::set<int>{kLeader});
  const auto found = job.violations();
  EXPECT_TRUE(reported(found, kDivergent, {5, 6}, kDiverge));
  for (const auto& records : found)
    for (const NodeJob::Seen& s : records) EXPECT_EQ(s.rank / kLocal, 1) << "only node 1 diverged";
}

TEST(CrossRankPerNode, ALeaderThatNeverOpensItsChannelTurnsItsNodeOffAndNoOneWaits) {
  CrossRankOptions o = NodeJob::fast_options();
  o.node_wait_ms = 100;
  NodeJob job("leader_never", o, /*unconnected=*/{8});
  for (int r = 8; r < 12; ++r) job.ranks[r].publishes = false;
  for (int s = 0; s < 10; ++s) {
    job.step(s, [&](int r) { return parameter_states(r, s, r == 1 && s == 7 ? 3 : 0); });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  job.close();
  for (int r : {9, 10, 11}) {
    EXPECT_EQ(job.ranks[r].stats().steps_published, 0u);
    EXPECT_EQ(job.ranks[r].stats().node, 2);
  }
  EXPECT_TRUE(reported(job.violations(), 1, {0, 2, 3}, 7));  // node 0 checks on
}

TEST(CrossRankPerNode, ASlowNodeIsNoFalseAlarm) {
  NodeJob job("slow_node");
  for (int r = 8; r < 12; ++r) job.ranks[r].store->call_delay_ms = 15;  // its job-store calls lag
  for (int s = 0; s < 10; ++s) job.step(s, [&](int r) { return parameter_states(r, s); });
  job.close();
  EXPECT_TRUE(job.violations().empty());
  EXPECT_GE(job.ranks[8].stats().folds.folds_published, 9u);
}

TEST(CrossRankPerNode, AJobStoreThatFailsTurnsTheFoldsOffAndTheNodesKeepCheckingThemselves) {
  NodeJob job("store_fails");
  for (int s = 0; s < 3; ++s) job.step(s, [&](int r) { return parameter_states(r, s); });
  job.store->failing = true;
  for (int r = 0; r < kWorld; r += kLocal) job.ranks[r].publishes = false;
  for (int s = 3; s < 10; ++s) {
    job.step(s, [&](int r) { return parameter_states(r, s, r == 2 && s == 6 ? 3 : 0); });
  }
  job.close();
  EXPECT_GE(job.ranks[0].stats().store_errors, 3u);
  EXPECT_TRUE(reported(job.violations(), 2, {1, 3}, 6));
}

// With the default window (as many steps as 1 MiB of small summaries holds: hundreds), a dead rank is
// out of it only long after: the comparisons with its node's other ranks go on meanwhile, and a
// divergence among them is reported while the run goes on, not held back behind the dead rank's step.
TEST(CrossRankPerNode, ADeadRankDoesNotHoldBackItsNodesOtherComparisons) {
  CrossRankOptions o = NodeJob::fast_options();
  o.keep_bytes = CrossRankOptions{}.keep_bytes;
  NodeJob job("dead_wide_window", o);
  constexpr int kDead = 6, kDivergent = 5, kDiverge = 6;
  for (int s = 0; s < 10; ++s) {
    if (s == 2) job.ranks[kDead].alive = false;
    job.step(s, [&](int r) { return parameter_states(r, s, r == kDivergent && s == kDiverge ? 9 : 0); });
  }
  job.settle([&] { return reported(job.violations(), kDivergent, {4, 7}, kDiverge); });
  EXPECT_TRUE(reported(job.violations(), kDivergent, {4, 7}, kDiverge)) << "found before the run ends";
  job.close();
  EXPECT_EQ(job.ranks[4].stats().lagging, std::set<int>{kDead});  // reported at the end
}
