// The job-wide half of per-node cross-rank checking (cross_rank_topology.h), run by each node's leader on
// the exchange's I/O thread: nodes compare one fold per step through the job's store, and records travel
// only where folds differ.
//
// A node's fold of a step is its leader's step digest (step_digest.h: a sum of per-variable digests, 8
// bytes whatever the model). The node's ranks compare their own steps with each other's locally, so
// the leader's digest stands for the node; a rank of it that differs is reported there.
//
// Per step each leader makes one set_if_absent of "fold/s<step>" to "<fold, hex> <rank> <process id>
// <its fold of the step before, hex>":
// the first leader to arrive sets the step's reference, every later one reads it back in the same call.
// Every node compared with one reference is a star of comparisons: equal folds everywhere prove every
// replica equal (equality is transitive). The leader whose fold became the reference also publishes its
// summary under "ref/s<step>" (chunked as cross_rank_exchange.h's step keys), and a leader whose fold
// differs fetches it: its checker pairs the reference's records with its own, and the report names both
// ranks, the variable and both values. The reference deletes its step's keys keep_steps steps later.
//
// Per step the job's store serves one call per node, one set of the reference's summary and two
// deletes; it moves a few dozen bytes per node plus one summary. Nothing waits: a reference summary
// not there yet is asked for again at the next poll, and given up (counted) once its step is older than
// the window.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "check/online/peer_store.h"

namespace traincheck {

struct NodeFoldStats {
  uint64_t folds_published = 0;
  uint64_t folds_matched = 0;       // equal to the step's reference (another node's)
  uint64_t folds_differing = 0;     // not equal: the reference's records fetched
  uint64_t references_published = 0;
  uint64_t references_missing = 0;  // a differing step's reference summary gone or never there (not compared)
  uint64_t chunks_published = 0;
  uint64_t lines_too_large = 0;
};

class NodeFoldExchange {
 public:
  // `job`: the job's store (not owned). `rank`: this leader's global rank.
  NodeFoldExchange(PeerStore& job, int rank, int64_t keep_steps);

  // This node's step, in step order: `fold` (the leader's step digest), the leader's process id and
  // summary (record frames). `trusted`: false when the leader's digest lacks a record it saw late, so
  // that only the records can tell: the reference's are fetched whatever its fold. Throws what the store
  // throws (the step is then not published; the caller counts the error).
  void publish(int64_t step, uint64_t fold, int64_t process_id, const std::string& summary, bool trusted);

  // What came of the steps published: the reference summaries now there of the steps whose fold
  // differed (each once, text set), and the steps whose fold matched another node's (matched_process
  // set). A store call that throws ends the poll: `failure` says why, what was not fetched stays pending.
  struct Got {
    int64_t step = 0;
    int rank = 0;  // the reference's leader
    std::string text;
    std::optional<int64_t> matched_process;
  };
  std::vector<Got> poll(std::optional<std::string>& failure);

  // Differing steps whose reference summary is still awaited.
  size_t pending() const { return pending_.size(); }
  const NodeFoldStats& stats() const { return stats_; }

 private:
  struct Pending {
    int64_t step;
    int rank;
  };
  struct Won {
    int64_t step;
    size_t chunks;
  };
  const int rank_;
  const int64_t keep_steps_;
  PeerStore& job_;
  std::deque<Won> won_;  // steps whose reference is this node's, oldest first: their keys to delete
  std::vector<Pending> pending_;
  std::vector<Got> matched_;
  std::optional<int64_t> last_step_;
  struct Last {
    int64_t step = 0;
    uint64_t fold = 0;
    bool trusted = false;
  };
  std::optional<Last> last_;  // this node's last fold published
  NodeFoldStats stats_;
};

}  // namespace traincheck
