// TrainingModeRelation: see the header of training_mode.cpp; its inference and check are
// StepClaimRelation's (step_claims.h).
#pragma once

#include "relations/step_claims.h"

namespace traincheck {

class TrainingModeRelation final : public StepClaimRelation {
 public:
  TrainingModeRelation();
  // The attribute the collector writes at an optimizer's step (python/traincheck/tracking/tracker.py).
  static constexpr std::string_view kAttribute = "_TRAINCHECK_model_training";
};

}  // namespace traincheck
