// In-process cross-rank checking (docs/analysis.md §Cross-rank checking in-process): the ranks of a job
// exchange, through the job's c10d store, a compact summary of each step they end, and each rank's
// online checker compares its own step ends with its peers' (Consistency invariants: data-parallel
// replicas must hold the same parameters at the same step).
//
// Two sides:
// - the writer side (observe, exchange, finish), called by the online session on the recorder's writer
//   thread under the session's lock: it keeps, per step, the last record of each local variable of a
//   type some check compares across ranks, and when the step has ended (a record of a later step was
//   seen) turns it into that step's summary: one binary record per variable with only the fields the
//   checks read (trace/record_frames.h). It hands summaries to the I/O thread and takes the peers'
//   summaries that arrived, read back.
// - the I/O thread, the only one that touches the store. Store calls may need the GIL (the c10d store is
//   a Python object), and the writer thread must never wait for it: the recorder's locks are held there
//   (a fork on the training thread, which holds the GIL, waits for them). The training thread never
//   waits for either.
//
// Keys (under the store's prefix): "s<step>/r<rank>" -> the summary of that rank's step;
// "latest/r<rank>" -> "<its latest step> <its oldest step still in the store>". Each rank deletes its
// oldest key when it publishes a step beyond its window (CrossRankOptions), so the store holds at most
// keep_steps keys per rank, or keep_bytes of them. A rank fetches, for each step it has ended, the
// summaries of its peers, chosen from the job's shape (cross_rank_topology.h): every other rank, the
// next ranks of the ring (a divergence between two groups of replicas always separates some pair of ring
// neighbours), or, per node, the other ranks of its node through a node-local store (node_channel.h),
// while the node's leader compares one fold per step with the other nodes through the job's store
// (node_fold_exchange.h). One check() for all of them and
// one multi_get() once all are there; a peer that has not published a step older than this rank's window
// is reported on stderr as lagging or stopped and skipped (compared again from the steps it publishes
// later), and a peer's step older than that peer's own window is skipped: nothing ever waits for a key,
// so a dead rank never hangs the others.
//
// A step key's value starts with a line "<chunks>" (match_by_digest: "<chunks> <digest, hex> <process
// id>"), then the summary itself when it has no chunks. A peer's step whose digest equals this rank's is
// not fetched further: its records are not read, and take_matched() reports it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "check/online/counting_peer_store.h"
#include "check/online/cross_rank_topology.h"
#include "check/online/node_channel.h"
#include "check/online/node_fold_exchange.h"
#include "check/online/peer_store.h"
#include "check/online/shared_fields_memo.h"
#include "check/online/step_digest.h"
#include "common/position_table.h"
#include "trace/key_table.h"
#include "trace/record.h"
#include "trace/record_frames.h"

namespace traincheck {

// The window of steps compared: at least keep_steps, and as many more as this rank's summaries of them
// fit in keep_bytes. Steps are counted, lag is not: a writer pass of a fast loop ends tens of steps at
// once, and a rank whose pass comes 20 ms after its peer's is tens of steps behind without lagging. A
// small model's summaries (a few kB a step) keep hundreds of steps; a large one's (15 MB a step at 50k
// parameters) keep_steps, as before.
struct CrossRankOptions {
  int peers = 0;             // ring neighbours compared (the next `peers` ranks); 0: chosen (cross_rank_topology.h)
  int64_t keep_steps = 8;    // steps a summary stays in the store at least; a peer further behind is lagging
  size_t keep_bytes = size_t{1} << 20;  // and more steps while this rank's kept summaries fit in this
  int poll_ms = 20;          // how often the I/O thread looks again for summaries not there yet
  int final_wait_ms = 2000;  // at the end, how long to wait for the peers' last steps
  // Publish each step's digest (step_digest.h) with its summary, and do not fetch a peer's step whose
  // digest equals this rank's: its records are not read, it is reported by take_matched(). Only when
  // the checks judge such a step without them (OnlineChecker::peer_steps_by_digest).
  bool match_by_digest = false;
  // The node's shape from the launcher (CrossRankLayout: LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK).
  int local_rank = -1;
  int local_world = 0;
  int node = -1;
  std::string node_root = {};  // where a node's channel is created; empty: default_node_channel_root()
  int node_wait_ms = 60000;    // how long a rank waits for its node's leader to open the channel, then turns off
};

// A peer's step whose digest equalled this rank's (CrossRankOptions::match_by_digest).
struct MatchedPeerStep {
  int64_t step = 0;
  int rank = 0;
  int64_t process_id = 0;  // the peer's, from its step key
};

// Store payloads are bounded whatever the model size: torch's TCPStore drops the connection (the job's
// own) on a message over 8 MiB, and a summary is about 200 bytes per variable (10 MB at 50k parameters).
// A summary up to kInlineSummaryBytes travels in its step key; a larger one is cut between records into
// chunks of at most kMaxStoreValueBytes under "s<step>/r<rank>/c<i>" (chunk_record_frames: each starts
// with the summary's key frame and reads alone), and the step key says how many.
// Every store call moves at most kMaxStoreValueBytes (multi_get of step keys: a batch of at most
// kMaxStoreValueBytes / kInlineSummaryBytes of them).
inline constexpr size_t kMaxStoreValueBytes = size_t{1} << 20;
inline constexpr size_t kInlineSummaryBytes = size_t{64} << 10;

struct CrossRankStats {
  std::optional<PeerGroup> group;  // once connected
  std::string mode;                // mode_name(): chosen once connected
  int node = -1;                   // per node: this rank's node, and whether it is its leader
  bool leader = false;
  std::vector<int> peers;          // the ranks this rank compares with (per node: within its node)
  uint64_t steps_published = 0;
  uint64_t bytes_published = 0;
  uint64_t summaries_received = 0;
  uint64_t summaries_matched = 0;  // of those, steps with this rank's digest: their records not fetched
  uint64_t records_received = 0;
  uint64_t store_ops = 0;
  uint64_t store_errors = 0;
  uint64_t steps_skipped = 0;      // (peer, step) pairs never compared: the peer lagged or stopped
  uint64_t chunks_published = 0;   // chunk keys written (summaries over kInlineSummaryBytes)
  uint64_t chunks_missing = 0;     // chunks of a peer's summary gone before they were read (its records not compared)
  uint64_t lines_too_large = 0;    // summary records over kMaxStoreValueBytes, never published
  uint64_t io_cpu_ns = 0;          // CPU time of the I/O thread (store calls, GIL hand-overs included)
  uint64_t job_store_calls = 0;    // calls to the job's store, and the bytes they moved (both ways)
  uint64_t job_store_bytes = 0;
  NodeFoldStats folds;             // per node, a leader's
  std::string last_error;
  std::set<int> lagging;           // peers now behind this rank's window
};

// A peer's window, from its latest key: its latest step and its oldest one still in the store.
struct PeerWindow {
  int64_t latest = 0, oldest = 0;
};
// nullopt when the value is not one or two integers.
std::optional<PeerWindow> parse_peer_window(const std::string& value, int64_t keep_steps);

class CrossRankExchange {
 public:
  // `fields`: what the checks read from a peer's records (OnlineChecker::peer_fields). Starts the I/O
  // thread.
  CrossRankExchange(std::unique_ptr<PeerStore> store, CrossRankOptions options, std::set<std::string> fields);
  ~CrossRankExchange();
  CrossRankExchange(const CrossRankExchange&) = delete;
  CrossRankExchange& operator=(const CrossRankExchange&) = delete;

  // Writer side. A local state record of a compared var type, as the checker checks it (the checker's
  // peer state observer picks them).
  void observe(const Record& record);
  // After a checked batch, with the highest step of this process's records so far: publishes the steps
  // before it, and returns the peers' step ends that arrived since the last call, to be checked.
  std::vector<Record> exchange(std::optional<int64_t> current_step);
  // The trace has ended: every step has, the last one too. Publishes them, waits up to final_wait_ms for
  // the peers' summaries of the steps this rank ended, stops the I/O thread and returns what arrived.
  std::vector<Record> finish();
  // The peers' steps matched by digest that arrived with the last exchange() or finish() (each once).
  std::vector<MatchedPeerStep> take_matched();

  CrossRankStats stats() const;
  // The summary a step whose variables' last records are `records` publishes (record_frames.h), and
  // the records a peer reads back from one (appended to `out`; false, with `error`, on a malformed one):
  // for tests and benchmarks, the same code the exchange runs.
  std::string summary_of(const std::vector<Record>& records) const;
  bool read_summary(std::string_view summary, std::vector<Record>& out, std::string& error);
  // The digest a step whose variables' last records are `records` publishes (step_digest.h).
  uint64_t digest_of(const std::vector<Record>& records) const;
  // Writer side: the bytes held for steps not handed over yet (each variable's frames), for tests.
  size_t pending_bytes() const;

 private:
  struct Received {
    int64_t step;
    int rank;
    std::string text;
    std::optional<int64_t> matched_process;  // matched by digest (text empty): the peer's process
  };
  struct Outgoing {
    int64_t step;
    std::string text;
    uint64_t digest;
    int64_t process_id;
  };
  void hand_over_ended(int64_t last_ended);
  std::vector<Record> take_received();
  void io_loop();
  bool connect(std::unique_lock<std::mutex>& lock);
  // Once the job's store gave the group: the plan, and the node channel to open when per node.
  void choose_plan(const PeerGroup& group);
  void publish(std::unique_lock<std::mutex>& lock);
  // A leader's: the other nodes' folds and the reference summaries of steps whose fold differed.
  void poll_folds(std::unique_lock<std::mutex>& lock);
  // A peer's rank in the job (peers are numbered within the node per node).
  int global_rank(int peer) const;
  // Up to a few rounds, each one step: the peers still owing it are asked for it (the lock released
  // around the store calls only), and what came is taken in.
  void fetch(std::unique_lock<std::mutex>& lock);
  // One round of fetch: the step asked for, the peers that owe it and their keys, this rank's digest of it.
  struct FetchRound {
    int64_t step = 0;
    bool behind = false;  // a step ended before the latest: its peers are asked one by one
    std::vector<int> wanted;
    std::vector<std::string> keys;
    std::optional<uint64_t> own_digest;
  };
  // What a round's store calls gave.
  struct Fetched {
    struct Got {
      int peer = 0;
      std::string text;
      std::optional<int64_t> matched_process;
    };
    std::vector<Got> got;
    std::vector<std::pair<int, std::string>> latest;  // of the peers whose summary is not there: their latest key
    bool all = false;                                 // every wanted summary was there
    uint64_t ops = 0, missing = 0;
    std::optional<std::string> failure;  // a store call threw: nothing of the round is taken in
  };
  // Under the lock: the next round, nullopt when every peer's summaries of this rank's ended steps are in,
  // or those still missing are of `waiting` peers (found this poll not to have published their next step:
  // a peer that died or lags never holds back the comparisons with the others).
  std::optional<FetchRound> plan_fetch(const std::set<int>& waiting) const;
  // Without the lock (the store is the I/O thread's own).
  Fetched query_store(const FetchRound& round);
  // Under the lock: the round's summaries into the inbox and the cursors moved, and the peers asked one
  // by one that had not published the step added to `waiting`; false when not every wanted summary was
  // there (or a store call failed).
  bool take_fetched(const FetchRound& round, Fetched& fetched, std::set<int>& waiting);
  void skip_lagging_peers();
  // At the end, after the final wait: the peers still missing a step keep_steps before this rank's last.
  void report_missing_at_end();
  // Whether a window of `steps` steps whose summaries total `bytes` holds more than CrossRankOptions lets.
  bool beyond_window(size_t steps, size_t bytes) const;
  void note_error(const std::exception& e);

  const CrossRankOptions options_;
  // The I/O thread's only: the job's store, counted; per node, the node's channel and its store, and a
  // leader's fold exchange. store_: the one peers' summaries travel through, once connected.
  const std::unique_ptr<CountingPeerStore> job_store_;
  std::unique_ptr<NodeChannel> channel_;
  std::unique_ptr<FilePeerStore> node_store_;
  std::unique_ptr<NodeFoldExchange> fold_;
  PeerStore* store_ = nullptr;
  CrossRankPlan plan_;  // under the lock
  std::chrono::steady_clock::time_point channel_since_{};
  RecordFrameEncoder encoder_;        // this rank's summaries: the identity and the fields the checks read
  StepDigester digester_;             // their digests (match_by_digest)
  // A record's shared fields, encoded (the memo's bytes: `count` fields as RecordFrameEncoder::
  // append_fields writes them) and digested once for all the records sharing them.
  struct SharedSummary {
    uint16_t count = 0;
    uint64_t digest = 0;
  };
  SharedFieldsMemo<SharedSummary> shared_summaries_;
  // The summary of a record's shared fields, when it has ones many records share (none shadowed then);
  // nullopt when its frame and digest are made field by field.
  std::optional<SharedFieldsMemo<SharedSummary>::Derived> shared_summary(const Record& r);

  // Writer side (the session's lock).
  // A step's summary as it grows: each local variable's record frame appended when observed; a variable
  // observed again in the step has its frame appended again and its earlier one dropped (compact: at
  // hand-over, or once the stale frames outweigh the live ones). Variables keep the order they first
  // appeared in (the summary's record order).
  struct StepStates {
    std::string frames;                          // the key frame, then the variables' record frames
    std::vector<uint64_t> ids;                   // per variable: (var type id, var name id)
    std::vector<std::pair<size_t, size_t>> last;  // per variable: its last frame (offset, size) in `frames`
    std::vector<uint64_t> digests;               // per variable: its last record's (match_by_digest)
    // id -> its index in `ids` (flat: 50k variables a step); only once the step left the order of the
    // step before (order_).
    bool in_order = true;
    PositionTable position;
    size_t stale_bytes = 0;                      // frames of `frames` that a later one replaced
  };
  void compact(StepStates& step) const;
  std::map<int64_t, StepStates> steps_;
  size_t last_step_variables_ = 0;          // the last step's: room for the next one's
  size_t last_step_bytes_ = 0;              // its frames' size, likewise
  std::vector<uint64_t> order_;             // its variables' ids, in the order they came
  std::optional<int64_t> next_to_publish_;  // the first step not yet handed over
  RecordFrameDecoder decoder_;
  int64_t process_id_ = 0;                  // this rank's, from the records observed
  std::vector<MatchedPeerStep> matched_;    // take_received()'s, for take_matched()

  // Shared with the I/O thread.
  mutable std::mutex mutex_;
  std::condition_variable wake_;     // the I/O thread waits on it
  std::condition_variable drained_;  // finish() waits on it
  std::deque<Outgoing> outbox_;  // in step order
  // Published summaries' buffers, for the writer's next steps (observe).
  static constexpr size_t kSpareFrameBuffers = 2;
  std::vector<std::string> spare_frames_;
  std::vector<Received> inbox_;
  // Steps this rank saw a record of after publishing them (observe): never matched by digest. The newest
  // kMaxLateSteps only (older ones are long out of every window).
  static constexpr size_t kMaxLateSteps = 1024;
  std::set<int64_t> late_steps_;
  bool stopping_ = false;  // finish(): the last steps are in the outbox
  // When stopping_ was set: the I/O thread's final wait and finish()'s wait for it count from the same
  // moment (final_wait_ms, and finish() 1 s more), whatever round the I/O thread was in.
  std::chrono::steady_clock::time_point stopped_at_{};
  bool done_ = false;      // the I/O thread has finished its last round
  CrossRankStats stats_;

  // The I/O thread's own.
  std::map<int, int64_t> cursor_;            // peer -> the next step wanted from it
  // A peer's summary from its step key's value (fetching its chunks, one store call each); `ops` counts
  // the calls. Without the lock. With match_by_digest, a value whose digest is `own_digest` (this rank's
  // for the step) is not fetched: empty, and `matched_process` set to the peer's process.
  std::string assemble(const std::string& step_value, int64_t step, int peer, uint64_t& ops, uint64_t& missing,
                       std::optional<uint64_t> own_digest, std::optional<int64_t>& matched_process);
  struct OwnKey {
    int64_t step;
    size_t chunks, bytes;
    uint64_t digest;
  };
  std::deque<OwnKey> own_keys_;  // this rank's keys still in the store, oldest first
  size_t own_bytes_ = 0;         // their summaries' size
  std::optional<int64_t> last_published_;
  std::chrono::steady_clock::time_point next_connect_{};
  int consecutive_errors_ = 0;
  bool disabled_ = false;
  std::thread io_;
};

}  // namespace traincheck
