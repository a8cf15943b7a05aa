// ForwardThroughWrapperRelation: see the header of forward_through_wrapper.cpp; its inference and check are
// StepClaimRelation's (step_claims.h).
#pragma once

#include "relations/step_claims.h"

namespace traincheck {

class ForwardThroughWrapperRelation final : public StepClaimRelation {
 public:
  ForwardThroughWrapperRelation();
  // The claim it reads, declared in record/step_claims.h.
  static constexpr std::string_view kAttribute = step_claim("forward_through_ddp").attribute;
};

}  // namespace traincheck
