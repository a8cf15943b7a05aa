// ParameterGetsGradientsRelation (ours; the original has no such relation)
//
// Learns: every parameter an optimizer trains receives gradients. A tensor detached on the way to the loss
// (`feat = feat.detach()` in forward), a layer whose output never reaches the loss, or a layer frozen
// (`requires_grad_(False)`) after its optimizer was built, leaves the parameters behind it with no
// gradient: the optimizer steps the rest, the loss still falls a little, and nothing fails. It names no API
// and no layer, so it carries across programs. A parameter frozen on purpose before its optimizer was built
// (fine-tuning a head over a frozen backbone, with `model.parameters()` handed to the optimizer) makes no
// claim, and neither does an optimizer step with nothing to apply (OptimizerHasGradientsRelation's).
//
// What is judged: the collector's claim "_TRAINCHECK_gets_gradients" (python/traincheck/tracking/tracker.py)
// on parameter states, made for a parameter an optimizer holds that required gradients when the optimizer
// was built. At the optimizer's steps from its fifth, when some parameter it holds has a gradient and this
// one requires gradients: true when it has had a gradient at one of that optimizer's steps so far. "So far"
// rather than "now" keeps a parameter that only some batches use (an expert of a mixture, a branch taken
// now and then) from alarming once it has been used; the price is that a layer that got gradients for a
// while and then stopped is not told. At the end of the run, on the states written then: true when it had
// a gradient at any step of that optimizer. A layer frozen for a warm-up and unfrozen later passes; one
// never unfrozen is told there, at the last step.
//
// Params: [VarTypeParam(t, "_TRAINCHECK_gets_gradients")], t the parameters' var type.
// Precondition group: "var" = [the state record], no field given to the learner.
//
// Example invariant:
//   {"relation": "ParameterGetsGradientsRelation", "params": [{"param_type": "VarTypeParam",
//      "var_type": "torch.nn.Parameter", "attr_name": "_TRAINCHECK_gets_gradients"}],
//    "precondition": {"var": {"inverted": false, "preconditions": [{"clauses": "Unconditional"}]}}, ...}
//
// Inference and check: StepClaimRelation's (step_claims.h), as GradientResetRelation's; one violation
// per optimizer step. Cost: one lookup of a field per state record of the var type.
#include "relations/parameter_gets_gradients.h"

namespace traincheck {

ParameterGetsGradientsRelation::ParameterGetsGradientsRelation()
    : StepClaimRelation({.relation = "ParameterGetsGradientsRelation",
                         .attribute = kAttribute,
                         .text = " held by an optimizer, and trainable when the optimizer was built, receives gradients (has a gradient at its optimizer's steps)",
                         .display = " held by its optimizer receives gradients"}) {}

}  // namespace traincheck
