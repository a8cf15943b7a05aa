// DistinctArgumentRelation: see the header of distinct_argument.cpp (inference, and the one check both
// offline and online checking run).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "invariant/held_record.h"
#include "invariant/precondition.h"
#include "invariant/relation.h"

namespace traincheck {

class DistinctArgumentOnlineCheck;

class DistinctArgumentRelation final : public Relation {
 public:
  std::string_view name() const override { return "DistinctArgumentRelation"; }
  RecordNeeds record_needs(const Invariant&) const override { return {.arguments = true, .var_types_in_first_api = {}, .var_types_in_apis = {}}; }
  std::vector<Hypothesis> generate(const TraceStore& trace) const override;
  void collect_examples(const TraceStore& trace, Hypothesis& hypothesis) const override;
  CheckResult check(const TraceStore& trace, const Invariant& invariant, const CheckOptions& options) const override;
  std::unique_ptr<OnlineCheck> make_online_check(const Invariant& invariant,
                                                 const ApiSignatures* signatures = nullptr) const override;
  std::string display_name(const Invariant& invariant) const override;

  // Functions that may take part: a pre-record with `args`, never more than this many records of
  // theirs in a row on a thread, not skipped for analysis.
  static constexpr size_t kMaxConsecutiveRecords = 6;
  // Whether two calls' positional argument lists count as the same (the original's rule): same positions, and
  // per position the same type, lists of integers overlapping (IoU of their sets) by at least 0.1,
  // floats within 1e-8, objects member by member, anything else equal. A tensor is the same argument
  // only when it holds the same data (_TRAINCHECK_data_ID) in the same process (`same_process`).
  static bool same_arguments(const Value& args1, const Value& args2, bool same_process = true);
  // The step a call is judged in: meta_vars.step, or -1 for a call without one.
  static int64_t step_of(const Record& pre) { return pre.has_step ? pre.step : -1; }

 private:
  static DistinctArgumentOnlineCheck make_check(const Invariant& invariant, std::optional<int64_t> steps_kept);
};

// DistinctArgumentRelation's check, online and offline (how: distinct_argument.cpp).
class DistinctArgumentOnlineCheck final : public OnlineCheck {
 public:
  // `steps_kept`: steps kept behind the newest one seen, besides -1 (nullopt: every step, offline).
  DistinctArgumentOnlineCheck(std::string function, std::optional<PreconditionGroup> precondition,
                              std::optional<int64_t> steps_kept = kStepsKept);
  void on_record(const Record& record, std::vector<OnlineViolation>& violations) override;
  bool triggered() const override { return triggered_; }
  OnlineInterest interest() const override;  // the API's records
  // Pre-records kept for comparison with later calls of their step, for tests.
  size_t kept_calls() const;

  // Steps kept online behind the newest one seen (ranks of a run drift apart by a step or two), besides -1.
  static constexpr int64_t kStepsKept = 8;

 private:
  std::string function_;
  Name name_;  // function_, interned: records are matched by id
  std::optional<PreconditionGroup> precondition_;
  std::optional<int64_t> steps_kept_;
  bool triggered_ = false;
  int64_t newest_step_ = -1;
  std::map<int64_t, std::vector<HeldRecord>> calls_by_step_;
};

}  // namespace traincheck
