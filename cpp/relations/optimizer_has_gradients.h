// OptimizerHasGradientsRelation: see the header of optimizer_has_gradients.cpp; its inference and check
// are StepClaimRelation's (step_claims.h).
#pragma once

#include "relations/step_claims.h"

namespace traincheck {

class OptimizerHasGradientsRelation final : public StepClaimRelation {
 public:
  OptimizerHasGradientsRelation();
  // The attribute the collector writes at an optimizer's step (python/traincheck/tracking/tracker.py).
  static constexpr std::string_view kAttribute = "_TRAINCHECK_optimizer_has_gradients";
};

}  // namespace traincheck
