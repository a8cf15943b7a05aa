// GradientResetOnceRelation (ours; the original has no such relation)
//
// Learns: between two steps of the optimizer that holds a parameter, at most one reset (`zero_grad`)
// throws away a gradient that backward computed: the gradient an optimizer step applies is everything
// backward put in since the reset that followed the previous step. Gradient accumulation keeps it (one
// reset per optimizer step, however many backward passes fill the gradient in between); a zero_grad
// moved inside the micro-batch loop breaks it at the first optimizer step (each micro-batch's gradient
// is thrown away by the next one's reset, and the step applies the last micro-batch's alone), as does
// any reset of a gradient that no step used. A GAN's discriminator, whose gradients from the
// generator's loss are reset once before its own backward, keeps it. The rule names no API.
//
// What is judged: the collector's claim on each parameter state written at an optimizer's step for the
// parameters that optimizer holds, "_TRAINCHECK_grad_reset_once" (python/traincheck/tracking/tracker.py):
// a reset is a recorded zero_grad call that changed the gradient, and it throws away a computed gradient
// when a write saw the gradient change since the previous reset outside a zero_grad or clipping call.
// Absent when there is no claim (the parameter is not the optimizer's, or it had no gradient at one of
// the two steps).
//
// Params: [VarTypeParam(t, "_TRAINCHECK_grad_reset_once")], t the parameters' var type.
// Precondition group: "var" = [the state record], no field given to the learner.
//
// Inference and check: StepClaimRelation's (step_claims.h), as GradientResetRelation's; one violation
// per optimizer step. Cost: one lookup of a field per state record of the var type.
#include "relations/gradient_reset_once.h"

#include "relations/gradient_reset.h"

namespace traincheck {

GradientResetOnceRelation::GradientResetOnceRelation()
    : StepClaimRelation({.relation = "GradientResetOnceRelation",
                         .attribute = kAttribute,
                         .text = ".grad is reset at most once between two steps of the optimizer holding it (no "
                                 "computed gradient is thrown away before a step applies it)",
                         .display = ".grad is reset at most once between optimizer steps"}) {}

RecordNeeds GradientResetOnceRelation::record_needs(const Invariant& inv) const {
  return GradientResetRelation::zero_grad_needs(var_type_of(inv));
}

}  // namespace traincheck
