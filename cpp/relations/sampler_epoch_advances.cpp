// SamplerEpochAdvancesRelation (ours; the original has no such relation)
//
// Learns: a shuffling DistributedSampler's epoch advances between the passes the training makes over it.
// Its order is a function of its seed and epoch only, so without `sampler.set_epoch(epoch)` at the top of
// each epoch every epoch sees the batches in the same order, on every rank; the model still trains and
// nothing fails. It names no API of the user's, so it carries across programs.
//
// What is judged: the collector's claim on each parameter state written at an optimizer's step for the
// tracked parameters that optimizer holds, "_TRAINCHECK_sampler_epoch_advanced"
// (python/traincheck/tracking/tracker.py): made at the first optimizer step after a DistributedSampler
// with `shuffle=True` began a pass, when an earlier pass of it was trained on too (an optimizer stepped
// after it began); true when the two passes' epochs differ. A pass no step follows (a peek at one batch
// before training, an evaluation over the training set) is no epoch of training and is never compared; a
// sampler without shuffling, or trained on once, makes no claim.
//
// Params: [VarTypeParam(t, "_TRAINCHECK_sampler_epoch_advanced")], t the parameters' var type.
// Precondition group: "var" = [the state record], no field given to the learner.
//
// Example invariant:
//   {"relation": "SamplerEpochAdvancesRelation", "params": [{"param_type": "VarTypeParam",
//      "var_type": "torch.nn.Parameter", "attr_name": "_TRAINCHECK_sampler_epoch_advanced"}],
//    "precondition": {"var": {"inverted": false, "preconditions": [{"clauses": "Unconditional"}]}}, ...}
//
// Inference and check: StepClaimRelation's (step_claims.h), as GradientResetRelation's; one violation
// per optimizer step. Cost: one lookup of a field per state record of the var type.
#include "relations/sampler_epoch_advances.h"

namespace traincheck {

SamplerEpochAdvancesRelation::SamplerEpochAdvancesRelation()
    : StepClaimRelation({.relation = "SamplerEpochAdvancesRelation",
                         .attribute = kAttribute,
                         .text = " is trained on data whose DistributedSampler order advances between epochs (set_epoch)",
                         .display = " is trained on a DistributedSampler whose epoch advances (set_epoch)"}) {}

}  // namespace traincheck
