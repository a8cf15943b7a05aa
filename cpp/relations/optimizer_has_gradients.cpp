// OptimizerHasGradientsRelation (ours; the original has no such relation)
//
// Learns: an optimizer steps only when some parameter it holds has a gradient, that is, every step has
// something to apply. An optimizer built over the wrong parameters (before a new head was attached, over
// the frozen ones only), or left holding tensors the model no longer uses, steps on nothing while the
// parameters that do get gradients are trained by no optimizer; the loss stays flat and nothing fails.
// It names no API and no layer, so it carries across programs. Gradient accumulation keeps it (the step
// comes after the backward passes), and so do the frozen parameters of an optimizer that also holds
// trained ones.
//
// What is judged: the collector's claim on each parameter state written at an optimizer's step for the
// tracked parameters that optimizer holds, "_TRAINCHECK_optimizer_has_gradients"
// (python/traincheck/tracking/tracker.py): whether any parameter the optimizer holds, tracked or not,
// has a gradient. An optimizer that holds no tracked parameter makes no claim (its parameters are
// nowhere in the trace).
//
// Params: [VarTypeParam(t, "_TRAINCHECK_optimizer_has_gradients")], t the parameters' var type.
// Precondition group: "var" = [the state record], no field given to the learner.
//
// Example invariant:
//   {"relation": "OptimizerHasGradientsRelation", "params": [{"param_type": "VarTypeParam",
//      "var_type": "torch.nn.Parameter", "attr_name": "_TRAINCHECK_optimizer_has_gradients"}],
//    "precondition": {"var": {"inverted": false, "preconditions": [{"clauses": "Unconditional"}]}}, ...}
//
// Inference and check: StepClaimRelation's (step_claims.h), as GradientResetRelation's; one violation
// per optimizer step. Cost: one lookup of a field per state record of the var type.
#include "relations/optimizer_has_gradients.h"

namespace traincheck {

OptimizerHasGradientsRelation::OptimizerHasGradientsRelation()
    : StepClaimRelation({.relation = "OptimizerHasGradientsRelation",
                         .attribute = kAttribute,
                         .text = " is held by an optimizer that steps only with a gradient to apply (a parameter it "
                                 "holds has requires_grad and a gradient)",
                         .display = "'s optimizer steps only with gradients to apply (requires_grad)"}) {}

}  // namespace traincheck
