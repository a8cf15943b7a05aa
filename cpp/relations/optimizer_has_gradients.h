// OptimizerHasGradientsRelation: see the header of optimizer_has_gradients.cpp; its inference and check
// are StepClaimRelation's (step_claims.h).
#pragma once

#include "relations/step_claims.h"

namespace traincheck {

class OptimizerHasGradientsRelation final : public StepClaimRelation {
 public:
  OptimizerHasGradientsRelation();
  // The claim it reads, declared in record/step_claims.h.
  static constexpr std::string_view kAttribute = step_claim("optimizer_has_gradients").attribute;
};

}  // namespace traincheck
