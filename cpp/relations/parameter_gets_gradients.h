// ParameterGetsGradientsRelation: see the header of parameter_gets_gradients.cpp; its inference and check are
// StepClaimRelation's (step_claims.h).
#pragma once

#include "relations/step_claims.h"

namespace traincheck {

class ParameterGetsGradientsRelation final : public StepClaimRelation {
 public:
  ParameterGetsGradientsRelation();
  // The claim it reads, declared in record/step_claims.h.
  static constexpr std::string_view kAttribute = step_claim("gets_gradients").attribute;
};

}  // namespace traincheck
