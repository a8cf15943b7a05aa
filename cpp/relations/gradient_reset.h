// GradientResetRelation: see the header of gradient_reset.cpp; its inference and check are
// StepClaimRelation's (step_claims.h).
#pragma once

#include "relations/step_claims.h"

namespace traincheck {

class GradientResetRelation final : public StepClaimRelation {
 public:
  GradientResetRelation();
  // The attribute the collector writes at an optimizer's step (python/traincheck/tracking/tracker.py).
  static constexpr std::string_view kAttribute = "_TRAINCHECK_grad_reset";
  // The zero_grad calls recorded with the parameters' changes inside them: a gradient zeroed in place
  // (set_to_none=False), or set to None and given back the same tensor (DDP's bucket views), is seen as
  // reset only there.
  RecordNeeds record_needs(const Invariant& invariant) const override;
  // Those calls for parameters of `var_type` (none for nullptr, a malformed invariant's).
  static RecordNeeds zero_grad_needs(const std::string* var_type);
};

}  // namespace traincheck
