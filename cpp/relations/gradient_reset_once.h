// GradientResetOnceRelation: see the header of gradient_reset_once.cpp; its inference and check are
// StepClaimRelation's (step_claims.h).
#pragma once

#include "relations/step_claims.h"

namespace traincheck {

class GradientResetOnceRelation final : public StepClaimRelation {
 public:
  GradientResetOnceRelation();
  // The claim it reads, declared in record/step_claims.h.
  static constexpr std::string_view kAttribute = step_claim("grad_reset_once").attribute;
  // As GradientResetRelation's: the zero_grad calls, recorded with the parameters' changes inside them.
  RecordNeeds record_needs(const Invariant& invariant) const override;
};

}  // namespace traincheck
