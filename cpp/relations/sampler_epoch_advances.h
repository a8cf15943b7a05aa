// SamplerEpochAdvancesRelation: see the header of sampler_epoch_advances.cpp; its inference and check are
// StepClaimRelation's (step_claims.h).
#pragma once

#include "relations/step_claims.h"

namespace traincheck {

class SamplerEpochAdvancesRelation final : public StepClaimRelation {
 public:
  SamplerEpochAdvancesRelation();
  // The claim it reads, declared in record/step_claims.h.
  static constexpr std::string_view kAttribute = step_claim("sampler_epoch_advanced").attribute;
};

}  // namespace traincheck
