// TrainingModeRelation: see the header of training_mode.cpp; its inference and check are
// StepClaimRelation's (step_claims.h).
#pragma once

#include "relations/step_claims.h"

namespace traincheck {

class TrainingModeRelation final : public StepClaimRelation {
 public:
  TrainingModeRelation();
  // The claim it reads, declared in record/step_claims.h.
  static constexpr std::string_view kAttribute = step_claim("model_training").attribute;
};

}  // namespace traincheck
