// GradientResetRelation: see the header of gradient_reset.cpp; its inference and check are
// StepClaimRelation's (step_claims.h).
#pragma once

#include "relations/step_claims.h"

namespace traincheck {

class GradientResetRelation final : public StepClaimRelation {
 public:
  GradientResetRelation();
  // The claim it reads, declared in record/step_claims.h.
  static constexpr std::string_view kAttribute = step_claim("grad_reset").attribute;
  // The zero_grad calls recorded with the parameters' changes inside them: a gradient zeroed in place
  // (set_to_none=False), or set to None and given back the same tensor (DDP's bucket views), is seen as
  // reset only there.
  RecordNeeds record_needs(const Invariant& invariant) const override;
  // Those calls for parameters of `var_type` (none for nullptr, a malformed invariant's).
  static RecordNeeds zero_grad_needs(const std::string* var_type);
};

}  // namespace traincheck
