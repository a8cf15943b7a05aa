// GradientClippedRelation (ours; the original has no such relation)
//
// Learns: once a parameter's gradient is clipped (clip_grad_norm_, clip_grad_value_), every step of its
// optimizer applies a clipped gradient: the gradient it steps on is the one the last clipping call
// left, unchanged since. Clipping moved after `optimizer.step()` (or before `backward`, or into a
// micro-batch loop before the last backward) clips a gradient no step uses, and the steps apply the
// raw gradients; the run is as if clipping were off, and nothing fails. Programs that never clip make
// no claim; AMP's unscale-then-clip, Lightning's and the HF Trainer's clipping keep it. The rule names
// no program's API or layer.
//
// What is judged: the collector's claim on each parameter state written at an optimizer's step for the
// parameters that optimizer holds, "_TRAINCHECK_grad_clipped" (python/traincheck/tracking/tracker.py):
// whether the gradient is the tensor a recorded clipping call last changed, at the version that call
// left. Absent when there is no claim (the parameter is not the optimizer's, it has no gradient, or its
// gradient was never clipped).
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
                         .text = ".grad, once clipped, is clipped before every step of the optimizer holding it (the "
                                 "step applies the gradient clip_grad_norm_ left)",
                         .display = ".grad is clipped before each optimizer step"}) {}

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
