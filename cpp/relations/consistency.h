// ConsistencyRelation: see the header of consistency.cpp (offline) and consistency_online.cpp (online).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "common/block_list.h"
#include "invariant/precondition.h"
#include "invariant/relation.h"
#include "relations/consistency_pairs.h"
#include "relations/var_instance_key.h"

namespace traincheck {

class ConsistencyRelation final : public Relation {
 public:
  std::string_view name() const override { return "ConsistencyRelation"; }
  // Its precondition group, evaluated on the two records that end a compared step (offline and online).
  static constexpr std::string_view kGroup = "var";
  std::vector<Hypothesis> generate(const TraceStore& trace) const override;
  void collect_examples(const TraceStore& trace, Hypothesis& hypothesis) const override;
  std::vector<std::string> precondition_keys_to_skip() const override;
  // meta_vars.step: states compared across instances belong to the same step.
  std::vector<std::string> precondition_consistent_keys_to_keep() const override;
  CheckResult check(const TraceStore& trace, const Invariant& invariant, const CheckOptions& options) const override;
  std::unique_ptr<OnlineCheck> make_online_check(const Invariant& invariant,
                                                 const ApiSignatures* signatures = nullptr) const override;
  // One check per group of invariants that compare the same variables (ConsistencyOnlineCheck::
  // shared_work_key): a model's many parameters are followed once, whatever the number of invariants.
  std::vector<OnlineCheckOf> make_online_checks(const std::vector<const Invariant*>& invariants,
                                                const ApiSignatures* signatures = nullptr) const override;
  std::string display_name(const Invariant& invariant) const override;

  // What is compared: per instance and step, the last record of the step and the state it belongs to
  // (its value). `compared` is false for the initial state of a type that skips it. Inference, the
  // offline and the online check all pair instances by these, never by time.
  struct StepEnd {
    int64_t step = 0;
    uint32_t record = 0;
    uint32_t state = 0;
    bool compared = true;
  };
  // The step ends of one attribute history, in step order.
  static std::vector<StepEnd> step_ends(const TraceStore& trace, const AttrHistory& history, bool skip_initial);
  // In a pair of instances of the same (type, attribute), which one is first (the records of a
  // violation come in that order): the smaller (process, variable name). Inference and both checks.
  static bool first_of_pair(int64_t process_a, std::string_view name_a, int64_t process_b, std::string_view name_b) {
    return std::tie(process_a, name_a) < std::tie(process_b, name_b);
  }
  // A record's step for pairing: meta_vars.step, or -1 when it has none.
  static int64_t step_of(const Record& record);
  // Values equal: exact, or both numbers within 1e-8. Inference, the offline and the online check all
  // judge a pair with it (the original's check is exact, and so flagged pairs inference called equal).
  static bool close_values(const Value& a, const Value& b);
  // Whether a variable type's first state (its value before training touched it) is left out of every
  // pair: tensors, modules and parameters, as the original's inference (not its check) does. Inference and
  // both checks share it.
  static bool skips_initial_state(std::string_view var_type);
};

// The online form of ConsistencyRelation::check (how it works: consistency_online.cpp), for one invariant
// or for several that compare the same variables (its members: OnlineCheck::members).
class ConsistencyOnlineCheck final : public OnlineCheck {
 public:
  // `invariants` must have equal shared_work_key()s (one invariant is a check of one member).
  explicit ConsistencyOnlineCheck(const std::vector<const Invariant*>& invariants);
  explicit ConsistencyOnlineCheck(const Invariant& invariant)
      : ConsistencyOnlineCheck(std::vector<const Invariant*>{&invariant}) {}
  // Invariants with the same key compare the same (var type, attribute) on each side, and so follow the
  // same instances and step ends: one check does that once for all of them. Empty: the invariant is not
  // checked online (its params are not two tracked variable attributes), it shares with none.
  static std::string shared_work_key(const Invariant& invariant);

  void on_record(const Record& record, std::vector<OnlineViolation>& violations) override;
  // Another rank's step end: its instance's step ends with this record at once (cross-rank checking).
  void on_peer_step_end(const Record& record, std::vector<OnlineViolation>& violations) override;
  // Every member pairs only the ends of one variable name (a `consistent var_name` clause, as the
  // invariants inference learns from data-parallel runs have): a peer's step with this process's digest
  // holds, for each of this process's ends, one twin with its value, so no pair of the step can violate.
  bool judges_peer_steps_by_digest() const override;
  // Marks the members whose pairs the step would have admitted as triggered, and remembers the step, so
  // that a peer instance first seen at a later step starts with its twin's history (whether its value
  // had changed by then), as it would have from the records skipped.
  void on_peer_step_matched(int64_t step, int64_t process_id) override;
  size_t members() const override { return members_.size(); }
  bool triggered() const override;  // any member's
  bool member_triggered(size_t member) const override { return members_.at(member)->triggered; }
  // Every member's precondition requires, in each of its disjuncts, the two records' process_id to differ
  // (as the invariants learned from data-parallel runs do): one process's records never pair.
  bool needs_other_processes() const override;
  // The state records of the params' var types, this process's and other ranks' step ends (the params'
  // attributes and the preconditions' fields).
  OnlineInterest interest() const override;
  // Step ends held now (running and kept ended ones, over all instances), for tests and memory reports.
  size_t tracked_states() const;
  // Step indexes built now (over kept steps, sides and shared indexes): an index is built only once its
  // step has ends it could pair (StepEnds), for tests and memory reports.
  size_t built_indexes() const;
  // How many ended steps are kept for instances still to finish them (lagging ranks, peers that publish
  // in bursts): at least kKeptSteps, and more while the kept ends number at most kKeptEndsPerProcess per
  // process seen (a small model's ends cover hundreds of steps; a large one's kKeptSteps, 16 x 50k ends
  // per process at 50k parameters). Per process, because each peer's ends are kept too: 16k ends a
  // process (a few MB of records) hold the cross-rank exchange's window, 1 MiB of a rank's summaries at
  // 64 bytes a variable or more (check/online/cross_rank_exchange.h; about 200 with the DDP invariant),
  // on this rank's side and each peer's.
  static constexpr int64_t kKeptSteps = 16;
  static constexpr size_t kKeptEndsPerProcess = size_t{1} << 14;
  // The bound on kept ends now: kKeptEndsPerProcess for each process seen.
  size_t kept_ends_limit() const { return kKeptEndsPerProcess * std::max<size_t>(1, processes_.size()); }
  // Violating pairs written per step and member (failed.log lines); the rest of the step's are counted
  // only (OnlineViolation::unwritten). A precondition that pairs every same-shaped parameter of a large
  // model has violations quadratic in its parameters; their count stays exact, their lines do not flood
  // the disk.
  static constexpr uint64_t kWrittenPerStep = 1000;

 private:
  // An instance's value at the end of a step on one param side (ConsistencyRelation::StepEnd online).
  struct Instance;
  struct End {
    int64_t step = 0;
    Record record;  // the last record of the step: the preconditions' view and evidence
    Value value;
    bool compared = true;
    Instance* instance = nullptr;
  };
  struct Instance {
    int64_t process_id = 0;
    Name var_name;
    VarInstanceKey key{};
    // The instance found after this one the last time (instance_of): a process's records of a step
    // come in the order of the step before.
    Instance* next_found = nullptr;
    std::optional<Value> value[2];  // per side: the last non-NaN value
    bool changed[2] = {false, false};  // per side: the value has changed once (past the initial state)
    // Per side, for a peer's twin after matched steps (on_peer_step_matched): the step of the first
    // change, and the value before it.
    int64_t changed_at[2] = {std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::max()};
    std::optional<Value> first_value[2];
    int64_t latest_step[2] = {0, 0};  // per side: the step of `value`
    std::optional<End> current[2];     // per side: the step now running, its last record so far
    // Per side: its end of a pruned step, whose storage its next running end takes (update): its record
    // shares its fields with the new one (its variable's template), so the copy changes no reference
    // count, and its field vector fits them.
    std::optional<End> spare[2];
    bool peer = false;                 // another rank's instance (its step ends come whole)
  };
  // One invariant's precondition, compiled for pairing (consistency_pairs.h). Held by pointer: the
  // condition refers to the precondition.
  struct Member {
    std::optional<PreconditionGroup> precondition;
    std::unique_ptr<PairCondition> condition;
    uint32_t index = 0;              // its SharedIndex
    bool filters_constants = false;  // the index is shared by shape: the member checks its constants' values
    // Every unequal clause of its condition is on a rank's own identity (is_rank_identity_key): a pair of
    // two ranks' twins is admitted exactly where either end alone is (on_peer_step_matched).
    bool twins_admitted_alone = false;
    bool triggered = false;
  };
  // How the ends of a step are indexed for some members: members whose conditions have one shape
  // (PairCondition::shape: they differ only in their constants' listed values) share one index, so
  // 100 invariants over the same parameters group each step end once, not 100 times. A condition that
  // is not shareable indexes for its member alone.
  struct SharedIndex {
    std::unique_ptr<PairCondition> relaxed;  // shared by shape: the constants as keys
    const PairCondition* condition = nullptr;
    std::vector<uint32_t> members;
    std::vector<uint32_t> guards;  // its unequal properties, as positions in guards_
  };
  // The compared ends of one step on one side, kept once, and per shared index their index
  // (consistency_pairs.h): position i of each index is ends[i] (ends never move: the indexes point into
  // them; their blocks come from the check's pool, end_blocks_). An index is built when the step first
  // has ends that its condition could pair (asleep()), from the ends so far, and kept up from then on.
  using EndList = BlockList<End>;
  struct StepEnds {
    explicit StepEnds(EndList::Pool& pool) : ends(pool) {}
    EndList ends;
    std::vector<std::optional<StepEndIndex>> index;  // per SharedIndex; empty while asleep
    std::vector<uint64_t> written;  // side 0 only, per member: violations of this step written so far
    UniformValues uniform;          // side 0 only, per guard: over both sides' ends of the step
    uint64_t local_ends = 0;        // side 0 only: this process's ends of the step, both sides
  };

  Instance& instance_of(const Record& r);
  // The record's value on `side` becomes the instance's running end; false when it has none.
  bool update(Instance& inst, int side, const Record& r, int64_t step);
  void share_indexes();
  void finish_step(Instance& inst, int side, std::vector<OnlineViolation>& violations);
  // Writes up to kWrittenPerStep of a member's violating pairs of `done` with `others` in a step, and
  // counts the rest.
  void report_pairs(const Instance& inst, int side, const End& done, StepEndIndex& index, const StepEnds& others,
                    uint64_t violating, uint32_t member, uint64_t& written,
                    std::vector<OnlineViolation>& violations) const;
  StepEnds& ended_at(int side, int64_t step);
  // Whether a shared index admits no pair of the step yet (`step`: side 0's StepEnds of the step): the
  // step has no end of this process (two peers' ends never pair), or some property its pairs must
  // differ on has one value over all the step's ends so far.
  bool asleep(const SharedIndex& shared, const StepEnds& step) const;
  // The step's index `i` on one side, built from the step's ends there on first use.
  StepEndIndex& index_of(int side, int64_t step, StepEnds& ends, size_t i);
  static PairEnd pair_end(const End& end);
  void prune();

  bool valid_ = false;
  bool symmetric_ = false;  // both params name the same (type, attr): unordered pairs
  bool skip_initial_[2] = {false, false};  // per side: ConsistencyRelation::skips_initial_state
  std::string type_[2], attr_[2];
  KeyId key_[2] = {kNoKey, kNoKey};
  std::vector<std::unique_ptr<Member>> members_;
  std::vector<SharedIndex> indexes_;
  std::vector<const Clause*> guards_;  // the distinct unequal properties of the groupable indexes
  std::vector<const Value*> projection_;  // finish_step's: the finished end's under a shared index
  std::vector<StepEndIndex*> awake_;      // finish_step's: the indexes the finished end joins
  std::unordered_map<VarInstanceKey, Instance, VarInstanceKeyHash> instances_;  // nodes: Instance addresses stable
  Instance* last_found_ = nullptr;  // instance_of's last
  // Blocks of pruned steps' ends, for the next steps' (declared before ended_, which gives them back
  // when destroyed): at most a step's worth at 130k parameters (512 blocks of 256 ends).
  static constexpr size_t kSpareEndBlocks = 512;
  EndList::Pool end_blocks_{kSpareEndBlocks};
  std::map<int64_t, StepEnds> ended_[2];  // per side: step -> the compared ends of that step seen so far
  size_t kept_ends_ = 0;                  // their ends, both sides
  // The process ids of the instances seen: one per rank, and per process of the run with variables of the
  // compared types (traincheck-onlinecheck following a run's folder); never pruned, as instances are not.
  std::vector<int64_t> processes_;
  std::optional<int64_t> local_process_;         // the process of the records on_record sees first
  std::map<int64_t, int64_t> last_matched_step_;  // peer process -> its last step matched by digest
  std::set<int64_t> matched_steps_;               // steps some peer matched (pruned with ended_)
  // Marks the members a twin pair of `end` (this process's) would trigger; whether one is left untriggered.
  bool trigger_by_twin(const End& end);
  // A new peer instance's history, from its twin in this process, when the peer's steps so far matched.
  void inherit_history(Instance& peer, int side, const Record& record, int64_t step);
  int64_t latest_ended_ = std::numeric_limits<int64_t>::min();
};

}  // namespace traincheck
