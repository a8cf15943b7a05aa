// Relations over the collector's claims at optimizer steps (StepClaimRelation): the tracker judges
// something per parameter when an optimizer steps (python/traincheck/tracking/tracker.py) and writes it
// as a bool attribute of the parameter's state (each claim declared once, in record/step_claims.h); the
// relation learns that the claim always holds and checks it. Inference and both checks share one verdict (`claim_of`); the check runs online and is
// replayed offline (relations/replay_check.h). Instances: GradientResetRelation (gradient_reset.h),
// TrainingModeRelation (training_mode.h), OptimizerHasGradientsRelation (optimizer_has_gradients.h),
// GradientResetOnceRelation (gradient_reset_once.h), GradientClippedRelation (gradient_clipped.h),
// ParameterGetsGradientsRelation (parameter_gets_gradients.h), EvalModeInValidationRelation
// (eval_mode_in_validation.h), ForwardThroughWrapperRelation (forward_through_wrapper.h),
// SamplerEpochAdvancesRelation (sampler_epoch_advances.h); what each claims and why it generalises is in
// its .cpp header.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "invariant/precondition.h"
#include "invariant/relation.h"
#include "record/step_claims.h"

namespace traincheck {

// One claim's relation: its name, the claim it reads (its attribute), and how its invariants read.
struct StepClaimWording {
  std::string_view relation;   // e.g. "GradientResetRelation"
  std::string_view attribute;  // the claim's (record/step_claims.h), e.g. step_claim("grad_reset").attribute
  std::string_view text;       // after the var type in text_description, e.g. ".grad is reset ..."
  std::string_view display;    // after the short var type in the display name
};

class StepClaimRelation : public Relation {
 public:
  static constexpr std::string_view kGroup = "var";

  explicit StepClaimRelation(const StepClaimWording& claim);
  std::string_view name() const override { return claim_.relation; }
  std::vector<Hypothesis> generate(const TraceStore& trace) const override;
  void collect_examples(const TraceStore& trace, Hypothesis& hypothesis) const override;
  // No precondition: a correct program where the claim fails shows that the rule is no rule; no clause
  // of its records should carve it out.
  std::vector<std::string> precondition_keys_to_skip() const override { return {""}; }
  CheckResult check(const TraceStore& trace, const Invariant& invariant, const CheckOptions& options) const override;
  std::unique_ptr<OnlineCheck> make_online_check(const Invariant& invariant,
                                                 const ApiSignatures* signatures = nullptr) const override;
  std::string display_name(const Invariant& invariant) const override;

  // The verdict inference and both checks share: nullopt when the record makes no claim.
  std::optional<bool> claim_of(const Record& state) const;
  // The attribute it reads: a claim's of record/step_claims.h.
  std::string_view attribute() const { return claim_.attribute; }

 protected:
  // The var type an invariant of this relation names; nullptr for a malformed one.
  const std::string* var_type_of(const Invariant& invariant) const;

 private:
  StepClaimWording claim_;
  KeyId key_;  // "attributes.<attribute>"
};

// A StepClaimRelation's check, online and replayed offline: one violation per optimizer step (per dump:
// the parameters it writes share one time), naming the first parameter whose claim failed.
class StepClaimOnlineCheck final : public OnlineCheck {
 public:
  StepClaimOnlineCheck(const StepClaimRelation& relation, std::string var_type,
                       std::optional<PreconditionGroup> precondition);
  void on_record(const Record& record, std::vector<OnlineViolation>& violations) override;
  bool triggered() const override { return triggered_; }
  OnlineInterest interest() const override;  // the var type's state records

 private:
  const StepClaimRelation& relation_;
  std::string var_type_;
  Name var_type_name_;
  std::optional<PreconditionGroup> precondition_;
  bool triggered_ = false;
  // The dump of the last violation: its process and time (further parameters of it are the same step).
  int64_t violated_process_ = 0, violated_time_ = -1;
};

}  // namespace traincheck
