// EvalModeInValidationRelation: see the header of eval_mode_in_validation.cpp; its inference and check are
// StepClaimRelation's (step_claims.h).
#pragma once

#include "relations/step_claims.h"

namespace traincheck {

class EvalModeInValidationRelation final : public StepClaimRelation {
 public:
  EvalModeInValidationRelation();
  // The claim it reads, declared in record/step_claims.h.
  static constexpr std::string_view kAttribute = step_claim("eval_in_validation").attribute;
};

}  // namespace traincheck
