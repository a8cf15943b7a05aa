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
  // Values equal for inference: exact, or both numbers within 1e-8 (the check uses exact equality).
  static bool close_values(const Value& a, const Value& b);
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
    Record last;  // the last record holding the value: the violation's evidence
  };
  struct Instance {
    int64_t process_id = 0;
    std::string var_name;
    int side = 0;                 // bit 0: matches params[0], bit 1: matches params[1]
    std::optional<State> open[2];  // per side: the current state
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
  std::string type_[2], attr_[2];
  KeyId key_[2] = {kNoKey, kNoKey};
  std::optional<PreconditionGroup> precondition_;
  std::map<InstanceKey, Instance> instances_;
};

}  // namespace traincheck
