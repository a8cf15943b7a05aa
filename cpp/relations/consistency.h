// ConsistencyRelation: see the header of consistency.cpp (offline) and consistency_online.cpp (online).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "invariant/precondition.h"
#include "invariant/relation.h"

namespace traincheck {

class ConsistencyRelation final : public Relation {
 public:
  std::string_view name() const override { return "ConsistencyRelation"; }
  std::vector<Hypothesis> generate(const TraceStore& trace) const override;
  void collect_examples(const TraceStore& trace, Hypothesis& hypothesis) const override;
  std::vector<std::string> precondition_keys_to_skip() const override;
  // meta_vars.step: states compared across instances belong to the same step.
  std::vector<std::string> precondition_consistent_keys_to_keep() const override;
  CheckResult check(const TraceStore& trace, const Invariant& invariant, const CheckOptions& options) const override;
  std::unique_ptr<OnlineCheck> make_online_check(const Invariant& invariant,
                                                 const ApiSignatures* signatures = nullptr) const override;
  std::string display_name(const Invariant& invariant) const override;

  // The liveness test shared by inference, the offline and the online check: intersection over union
  // of [s1, e1] and [s2, e2] above 1%. Two empty intervals at the same instant count as overlapping.
  static bool overlaps(int64_t s1, int64_t e1, int64_t s2, int64_t e2);
  // Values equal: exact, or both numbers within 1e-8. Inference, the offline and the online check all
  // judge a pair with it (the original's check is exact, and so flagged pairs inference called equal).
  static bool close_values(const Value& a, const Value& b);
  // Whether a variable type's first state (its value before training touched it) is left out of every
  // pair: tensors, modules and parameters (compat §8.2). Inference and both checks share it.
  static bool skips_initial_state(std::string_view var_type);
  // The record a state shows in a pair, to the precondition and as evidence: the one that began it,
  // in inference as in both checks (the original's examples use the first, its check the last, so what
  // it learned was checked on other records). The first, because a state's later records carry later
  // steps: DDP replicas' states then disagree on "same step" at their ends, and no precondition is
  // found; and a violation is reported at the step where the values began to differ.
  static uint32_t state_record(const AttrState& state) { return state.records.front(); }
};

// The online form of ConsistencyRelation::check (how it works: consistency_online.cpp).
class ConsistencyOnlineCheck final : public OnlineCheck {
 public:
  explicit ConsistencyOnlineCheck(const Invariant& invariant);
  void on_record(const Record& record, std::vector<OnlineViolation>& violations) override;
  bool triggered() const override { return triggered_; }
  // The state records of the params' var types.
  OnlineInterest interest() const override;
  // States held now (open and kept closed ones, over all instances), for tests and memory reports.
  size_t tracked_states() const;

 private:
  struct State {
    Value value;
    int64_t start = 0, end = 0;
    Record first;  // the record that began the state (state_record): the precondition's view and evidence
    bool initial = false;  // the instance's first state of a type that skips it: never compared
  };
  struct Instance {
    int64_t process_id = 0;
    std::string var_name;
    int side = 0;                 // bit 0: matches params[0], bit 1: matches params[1]
    std::optional<State> open[2];  // per side: the current state
    bool seen[2] = {false, false};  // per side: a state has begun (the next one is not the first)
    std::deque<State> closed[2];   // per side: ended states that may still overlap another's open state
  };
  using InstanceKey = std::tuple<int64_t, std::string, std::string>;  // (pid, var_name, var_type)

  void close_state(Instance& inst, int side, int64_t now, std::vector<OnlineViolation>& violations);
  void compare(const State& closing, const Instance& inst, int side, const State& other, const Instance& other_inst,
               std::vector<OnlineViolation>& violations);
  void prune(int64_t now);

  bool valid_ = false;
  bool triggered_ = false;
  bool symmetric_ = false;  // both params name the same (type, attr): unordered pairs
  bool skip_initial_[2] = {false, false};  // per side: ConsistencyRelation::skips_initial_state
  std::string type_[2], attr_[2];
  KeyId key_[2] = {kNoKey, kNoKey};
  std::optional<PreconditionGroup> precondition_;
  std::map<InstanceKey, Instance> instances_;
};

}  // namespace traincheck
