// GradientResetRelation (ours; the original has no such relation)
//
// Learns: between two steps of the optimizer that holds a parameter, at both of which the parameter had
// a gradient, its gradient is reset (`zero_grad`, or set to None by hand): backward does not accumulate
// into the gradient the last step already used. A missing `zero_grad`, a reset that only one of two
// optimizers gets, or a model rolled back into tensors the optimizer no longer holds break it at the
// next step, in any program: the rule names no API, so it carries across programs where orderings of
// the loop's own calls do not (docs/relations.md §GradientResetRelation). Gradient
// accumulation keeps it: the reset comes once per optimizer step, however many backward passes fill
// the gradient in between.
//
// What is judged: the collector's claim on each parameter state written at an optimizer's step for the
// parameters that optimizer holds, "_TRAINCHECK_grad_reset" (python/traincheck/tracking/tracker.py):
// true when the gradient is another tensor than at that optimizer's previous step, or a recorded
// zero_grad call changed it in between; false when the same tensor was used on; absent when there is no
// claim (the parameter is not the optimizer's, or it had no gradient at one of the two steps: a layer
// unfrozen mid-run starts from None, not from a reset).
//
// Params: [VarTypeParam(t, "_TRAINCHECK_grad_reset")], t the parameters' var type.
// Precondition group: "var" = [the state record]. The learner is given no field to use (every key is
// skipped): one program's stepping without a reset makes the hypothesis fail, it is not carved out.
//
// Example invariant:
//   {"relation": "GradientResetRelation", "params": [{"param_type": "VarTypeParam",
//      "var_type": "torch.nn.Parameter", "attr_name": "_TRAINCHECK_grad_reset"}],
//    "precondition": {"var": {"inverted": false, "preconditions": [{"clauses": [], ...}]}}, ...}
//   (the engine writes a precondition of no clauses as "Unconditional").
//
// Inference and check: StepClaimRelation's (step_claims.h). Per var type, the state records with a
// claim; a claim of a reset is a positive, a claim of none a negative. A hypothesis needs two positives
// (the engine's rule) and no negatives. A claim of no reset whose record satisfies the precondition is
// a violation; the parameters of one optimizer step share the dump's time, so one violation per step is
// reported (its first parameter), not one per parameter of a large model. Cost: one lookup of a field
// per state record of the var type.
#include "relations/gradient_reset.h"

namespace traincheck {

GradientResetRelation::GradientResetRelation()
    : StepClaimRelation({.relation = "GradientResetRelation",
                         .attribute = kAttribute,
                         .text = ".grad is reset (zero_grad) between two steps of the optimizer holding it",
                         .display = ".grad is reset (zero_grad) between optimizer steps"}) {}

RecordNeeds GradientResetRelation::record_needs(const Invariant& inv) const { return zero_grad_needs(var_type_of(inv)); }

RecordNeeds GradientResetRelation::zero_grad_needs(const std::string* var_type) {
  RecordNeeds needs;
  if (var_type != nullptr)
    for (const char* api : {"torch.optim.optimizer.Optimizer.zero_grad", "torch.nn.modules.module.Module.zero_grad"})
      needs.var_types_in_apis.emplace_back(api, *var_type);
  return needs;
}

}  // namespace traincheck
