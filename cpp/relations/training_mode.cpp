// TrainingModeRelation (ours; the original has no such relation)
//
// Learns: when an optimizer steps a parameter that has a gradient, the model the parameter belongs to
// (the tracked model, `--models-to-track`) is in training mode. A model left in eval mode after a
// validation pass, or a discriminator put in eval mode for a sanity check and never put back, breaks it
// at its next optimizer step, in any program and whatever layers the model has: dropout and batch norm
// change their behaviour there, and no other layer shows the mistake (ModuleModeRelation, per forward
// function, needs that function seen in enough programs to ship in a pack, and has shipped only for
// Linear). Only the tracked model's own flag counts, never a layer's: a BatchNorm layer put in eval mode
// on purpose inside a training model (frozen statistics when fine-tuning) is no violation, and a model
// that no optimizer steps (a teacher, an EMA copy) makes no claim.
//
// What is judged: the collector's claim on each parameter state written at an optimizer's step for the
// parameters that optimizer holds and that have a gradient, "_TRAINCHECK_model_training"
// (python/traincheck/tracking/tracker.py): the `training` flag of the model it was tracked under (the
// module itself, the module inside a DDP wrapper, or a Trainer's model); absent for a tensor tracked
// by itself, a parameter without a gradient, or one the stepping optimizer does not hold.
//
// Params: [VarTypeParam(t, "_TRAINCHECK_model_training")], t the parameters' var type.
// Precondition group: "var" = [the state record], no field given to the learner.
//
// Example invariant:
//   {"relation": "TrainingModeRelation", "params": [{"param_type": "VarTypeParam",
//      "var_type": "torch.nn.Parameter", "attr_name": "_TRAINCHECK_model_training"}],
//    "precondition": {"var": {"inverted": false, "preconditions": [{"clauses": "Unconditional"}]}}, ...}
//
// Inference and check: StepClaimRelation's (step_claims.h), as GradientResetRelation's: a claim of
// training mode is a positive, of eval mode a negative (which fails the hypothesis); one violation per
// optimizer step. Cost: one lookup of a field per state record of the var type.
#include "relations/training_mode.h"

namespace traincheck {

TrainingModeRelation::TrainingModeRelation()
    : StepClaimRelation({.relation = "TrainingModeRelation",
                         .attribute = kAttribute,
                         .text = " is stepped by its optimizer only while its model is in training mode (Module.train)",
                         .display = " is trained only while its model is in training mode (Module.train)"}) {}

}  // namespace traincheck
