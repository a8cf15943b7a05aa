// OptimizerStepsRelation: see the header of optimizer_steps.cpp; its inference and check are
// StepClaimRelation's (step_claims.h).
#pragma once

#include "relations/step_claims.h"

namespace traincheck {

class OptimizerStepsRelation final : public StepClaimRelation {
 public:
  OptimizerStepsRelation();
  // The claim it reads, declared in record/step_claims.h.
  static constexpr std::string_view kAttribute = step_claim("optimizer_stepped").attribute;
};

}  // namespace traincheck
