// GradientResetRelation: see the header of gradient_reset.cpp (inference, and the one check both offline
// and online checking run).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "invariant/precondition.h"
#include "invariant/relation.h"

namespace traincheck {

class GradientResetRelation final : public Relation {
 public:
  std::string_view name() const override { return "GradientResetRelation"; }
  // The attribute the collector writes at an optimizer's step (python/traincheck/tracking/tracker.py).
  static constexpr std::string_view kAttribute = "_TRAINCHECK_grad_reset";
  static constexpr std::string_view kGroup = "var";

  // The zero_grad calls recorded with the parameters' changes inside them: a gradient zeroed in place
  // (set_to_none=False), or set to None and given back the same tensor (DDP's bucket views), is seen as
  // reset only there.
  RecordNeeds record_needs(const Invariant& invariant) const override;
  std::vector<Hypothesis> generate(const TraceStore& trace) const override;
  void collect_examples(const TraceStore& trace, Hypothesis& hypothesis) const override;
  // No precondition: a program that steps without resetting, where a correct one was recorded, shows
  // that the rule is no rule; no clause of its records should carve it out.
  std::vector<std::string> precondition_keys_to_skip() const override { return {""}; }
  CheckResult check(const TraceStore& trace, const Invariant& invariant, const CheckOptions& options) const override;
  std::unique_ptr<OnlineCheck> make_online_check(const Invariant& invariant,
                                                 const ApiSignatures* signatures = nullptr) const override;
  std::string display_name(const Invariant& invariant) const override;

  // The verdict inference and both checks share: nullopt when the record makes no claim (not written at
  // a step of an optimizer holding the parameter, or without a gradient at one of the two steps).
  static std::optional<bool> was_reset(const Record& state);
};

// GradientResetRelation's check, online and replayed offline: one violation per optimizer step (per
// dump: the parameters it holds share one time), naming the first parameter not reset.
class GradientResetOnlineCheck final : public OnlineCheck {
 public:
  GradientResetOnlineCheck(std::string var_type, std::optional<PreconditionGroup> precondition);
  void on_record(const Record& record, std::vector<OnlineViolation>& violations) override;
  bool triggered() const override { return triggered_; }
  OnlineInterest interest() const override;  // the var type's state records

 private:
  std::string var_type_;
  Name var_type_name_;
  std::optional<PreconditionGroup> precondition_;
  bool triggered_ = false;
  // The dump of the last violation: its process and time (further parameters of it are the same step).
  int64_t violated_process_ = 0, violated_time_ = -1;
};

}  // namespace traincheck
