// GradientClippedRelation: see the header of gradient_clipped.cpp; its inference and check are
// StepClaimRelation's (step_claims.h).
#pragma once

#include "relations/step_claims.h"

namespace traincheck {

class GradientClippedRelation final : public StepClaimRelation {
 public:
  GradientClippedRelation();
  // The attribute the collector writes at an optimizer's step (python/traincheck/tracking/tracker.py).
  static constexpr std::string_view kAttribute = "_TRAINCHECK_grad_clipped";
  // torch's clipping functions, recorded with the parameters' changes inside them: the tracker sees a
  // gradient clipped only there.
  RecordNeeds record_needs(const Invariant& invariant) const override;
};

}  // namespace traincheck
