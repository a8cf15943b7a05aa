// GradientClippedRelation (ours; the original has no such relation)
//
// Learns: a parameter's gradient clipped (clip_grad_norm_, clip_grad_value_) since the previous step of
// the optimizer holding it is the gradient this step applies: clipping comes between the last backward
// and the step. Clipping moved after `optimizer.step()` (or before `backward`, or into a micro-batch
// loop before the last backward) clips a gradient no step uses, and the steps apply the raw gradients;
// the run trains as if clipping were off, and nothing fails. A step with no clipping since the previous
// one (a program that never clips, clips every other step, or takes an extra step for another
// objective) makes no claim; AMP's unscale-then-clip, Lightning's and the HF Trainer's clipping keep it.
// The rule names no program's API or layer.
//
// What is judged: the collector's claim on each parameter state written at an optimizer's step for the
// parameters that optimizer holds, "_TRAINCHECK_grad_clipped" (python/traincheck/tracking/tracker.py):
// when a recorded clipping call changed the gradient since that optimizer's previous step (at its first
// step: ever), whether the gradient is the tensor that call left, at the version it left. Absent when
// there is no claim (the parameter is not the optimizer's, it has no gradient, or it was not clipped
// since).
//
// Params: [VarTypeParam(t, "_TRAINCHECK_grad_clipped")], t the parameters' var type.
// Precondition group: "var" = [the state record], no field given to the learner.
//
// Inference and check: StepClaimRelation's (step_claims.h), as GradientResetRelation's; one violation
// per optimizer step. Cost: one lookup of a field per state record of the var type.
#include "relations/gradient_clipped.h"

namespace traincheck {

GradientClippedRelation::GradientClippedRelation()
    : StepClaimRelation({.relation = "GradientClippedRelation",
                         .attribute = kAttribute,
                         .text = ".grad clipped since the previous step of the optimizer holding it is the gradient "
                                 "the step applies (clipping comes between backward and step)",
                         .display = ".grad is clipped between backward and the optimizer step"}) {}

RecordNeeds GradientClippedRelation::record_needs(const Invariant& inv) const {
  RecordNeeds needs;
  if (const std::string* var_type = var_type_of(inv))
    // clip_grad_norm_ clips through _clip_grads_with_norm_ (torch >= 2.6); the public clip_grads_with_norm_
    // is not in every version, and a plan naming an API the library lacks warns the user.
    for (const char* api : {"torch.nn.utils.clip_grad.clip_grad_norm_", "torch.nn.utils.clip_grad._clip_grads_with_norm_",
                            "torch.nn.utils.clip_grad.clip_grad_value_"})
      needs.var_types_in_apis.emplace_back(api, *var_type);
  return needs;
}

}  // namespace traincheck
