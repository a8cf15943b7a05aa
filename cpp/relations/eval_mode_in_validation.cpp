// EvalModeInValidationRelation (ours; the original has no such relation)
//
// Learns: a model's validation passes run in eval mode. A validation loop run without `model.eval()`
// measures the model with dropout active and, worse, updates every batch-norm layer's running statistics
// with the validation data, so the model trained afterwards is not the one the training steps made. Loss
// and accuracy look plausible and nothing fails. It names no API and no layer, so it carries across
// programs.
//
// What is judged: the collector's claim on each parameter state written at an optimizer's step,
// "_TRAINCHECK_eval_in_validation" (python/traincheck/tracking/tracker.py): made for the parameters of a
// tracked model that ran forward passes with gradients disabled (`no_grad`, `inference_mode`) inside an
// evaluation loop (a loop the collector annotates with start_eval_step, docs/collection.md §Step and
// stage annotations) since that optimizer's previous step, when the model holds a layer whose behaviour
// depends on its mode (dropout with p > 0, a normalisation layer keeping running statistics: without one
// the mode changes nothing); true when every such forward ran with the model's `training` flag off. A forward with gradients enabled, or outside an evaluation loop (a GAN's
// generator sampling inside its training step), makes no claim, and neither does a loop inside a library
// (a Trainer's evaluation calls `model.eval()` itself and is not annotated).
//
// Params: [VarTypeParam(t, "_TRAINCHECK_eval_in_validation")], t the parameters' var type.
// Precondition group: "var" = [the state record], no field given to the learner.
//
// Example invariant:
//   {"relation": "EvalModeInValidationRelation", "params": [{"param_type": "VarTypeParam",
//      "var_type": "torch.nn.Parameter", "attr_name": "_TRAINCHECK_eval_in_validation"}],
//    "precondition": {"var": {"inverted": false, "preconditions": [{"clauses": "Unconditional"}]}}, ...}
//
// Inference and check: StepClaimRelation's (step_claims.h), as GradientResetRelation's; one violation
// per optimizer step. Cost: one lookup of a field per state record of the var type.
#include "relations/eval_mode_in_validation.h"

namespace traincheck {

EvalModeInValidationRelation::EvalModeInValidationRelation()
    : StepClaimRelation({.relation = "EvalModeInValidationRelation",
                         .attribute = kAttribute,
                         .text = " belongs to a model that runs its validation passes (forward without gradients in an evaluation loop) in eval mode (Module.eval)",
                         .display = "'s model validates in eval mode (Module.eval)"}) {}

}  // namespace traincheck
