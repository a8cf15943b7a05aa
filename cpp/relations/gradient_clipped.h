// GradientClippedRelation: see the header of gradient_clipped.cpp; its inference and check are
// StepClaimRelation's (step_claims.h).
#pragma once

#include "relations/step_claims.h"

namespace traincheck {

class GradientClippedRelation final : public StepClaimRelation {
 public:
  GradientClippedRelation();
  // The claim it reads, declared in record/step_claims.h.
  static constexpr std::string_view kAttribute = step_claim("grad_clipped").attribute;
  // torch's clipping functions, recorded with the parameters' changes inside them: the tracker sees a
  // gradient clipped only there.
  RecordNeeds record_needs(const Invariant& invariant) const override;
};

}  // namespace traincheck
