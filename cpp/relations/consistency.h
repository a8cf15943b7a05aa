// ConsistencyRelation: see the header of consistency.cpp (offline) and consistency_online.cpp (online).
#pragma once

#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "invariant/precondition.h"
#include "invariant/relation.h"
#include "relations/consistency_pairs.h"

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

// The online form of ConsistencyRelation::check (how it works: consistency_online.cpp).
class ConsistencyOnlineCheck final : public OnlineCheck {
 public:
  explicit ConsistencyOnlineCheck(const Invariant& invariant);
  void on_record(const Record& record, std::vector<OnlineViolation>& violations) override;
  // Another rank's step end: its instance's step ends with this record at once (cross-rank checking).
  void on_peer_step_end(const Record& record, std::vector<OnlineViolation>& violations) override;
  bool triggered() const override { return triggered_; }
  // The state records of the params' var types, this process's and other ranks' step ends (the params'
  // attributes and the precondition's fields).
  OnlineInterest interest() const override;
  // Step ends held now (running and kept ended ones, over all instances), for tests and memory reports.
  size_t tracked_states() const;
  // How many ended steps are kept for instances still to finish them (lagging ranks).
  static constexpr int64_t kKeptSteps = 16;
  // Violating pairs written per step (failed.log lines); the rest of the step's are counted only
  // (OnlineViolation::unwritten). A precondition that pairs every same-shaped parameter of a large model
  // has violations quadratic in its parameters; their count stays exact, their lines do not flood the disk.
  static constexpr uint64_t kWrittenPerStep = 1000;

 private:
  // An instance's value at the end of a step on one param side (ConsistencyRelation::StepEnd online).
  struct Instance;
  struct End {
    int64_t step = 0;
    Record record;  // the last record of the step: the precondition's view and evidence
    Value value;
    bool compared = true;
    const Instance* instance = nullptr;
  };
  struct Instance {
    int64_t process_id = 0;
    std::string var_name;
    std::optional<Value> value[2];  // per side: the last non-NaN value
    bool changed[2] = {false, false};  // per side: the value has changed once (past the initial state)
    std::optional<End> current[2];     // per side: the step now running, its last record so far
    bool peer = false;                 // another rank's instance (its step ends come whole)
  };
  // The compared ends of one step on one side, and their index (consistency_pairs.h): position i of the
  // index is ends[i] (a deque: the index points into it).
  struct StepEnds {
    explicit StepEnds(const PairCondition& condition) : index(condition) {}
    std::deque<End> ends;
    StepEndIndex index;
    uint64_t written = 0;  // side 0 only: violations of this step written so far
  };

  Instance& instance_of(const Record& r);
  // The record's value on `side` becomes the instance's running end; false when it has none.
  bool update(Instance& inst, int side, const Record& r, int64_t step);
  void finish_step(Instance& inst, int side, std::vector<OnlineViolation>& violations);
  static PairEnd pair_end(const End& end);
  void prune();

  bool valid_ = false;
  bool triggered_ = false;
  bool symmetric_ = false;  // both params name the same (type, attr): unordered pairs
  bool skip_initial_[2] = {false, false};  // per side: ConsistencyRelation::skips_initial_state
  std::string type_[2], attr_[2];
  KeyId key_[2] = {kNoKey, kNoKey};
  std::optional<PreconditionGroup> precondition_;
  std::unique_ptr<PairCondition> condition_;  // over precondition_
  // By (pid, var_name, var_type), packed into one string: found without an allocation per record
  // (instance_key_ is reused); nodes keep Instance addresses stable.
  std::unordered_map<std::string, Instance> instances_;
  std::string instance_key_;
  std::map<int64_t, StepEnds> ended_[2];  // per side: step -> the compared ends of that step seen so far
  int64_t latest_ended_ = std::numeric_limits<int64_t>::min();
};

}  // namespace traincheck
