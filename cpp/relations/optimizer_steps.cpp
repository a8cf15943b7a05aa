// OptimizerStepsRelation (ours; the original has no such relation)
//
// Learns: an optimizer whose parameters receive gradients steps. A training loop that computes the loss and
// its gradients but never calls `optimizer.step()` (the line left out, or under a condition that never
// holds, such as an accumulation count larger than the epoch) trains nothing: the loss stays where it
// was, and nothing fails. The claims at an optimizer's steps cannot tell it, as there are none; this one
// is made at the end of the run. It names no API and no layer, so it carries across programs. An optimizer
// built and never used (a script that only evaluates a checkpoint) computes no gradient and makes no claim.
//
// What is judged: the collector's claim "_TRAINCHECK_optimizer_stepped" (python/traincheck/tracking/tracker.py)
// on the parameter states written at the end of the run, for every parameter an optimizer was built to
// train (it required gradients when the optimizer was built): true when that optimizer stepped, false when
// it never did while some parameter it was built to train has a gradient then.
//
// Params: [VarTypeParam(t, "_TRAINCHECK_optimizer_stepped")], t the parameters' var type.
// Precondition group: "var" = [the state record], no field given to the learner.
//
// Inference and check: StepClaimRelation's (step_claims.h), as GradientResetRelation's; one violation per
// state record written with the claim false (the run's end). Cost: one lookup of a field per state record of
// the var type.
#include "relations/optimizer_steps.h"

namespace traincheck {

OptimizerStepsRelation::OptimizerStepsRelation()
    : StepClaimRelation({.relation = "OptimizerStepsRelation",
                         .attribute = kAttribute,
                         .text = " that an optimizer was built to train is stepped by it once it has gradients (optimizer.step)",
                         .display = "'s optimizer steps once it has gradients (optimizer.step)"}) {}

}  // namespace traincheck
