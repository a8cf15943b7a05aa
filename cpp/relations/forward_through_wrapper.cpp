// ForwardThroughWrapperRelation (ours; the original has no such relation)
//
// Learns: a model that a DistributedDataParallel wraps runs its training forward passes through the
// wrapper. Calling the inner module (`model.module(x)`) in the training step skips DDP's forward hooks:
// the backward pass then averages no gradient across ranks (or, with find_unused_parameters, waits for
// buckets that never fill), so the replicas drift apart step by step while each rank's loss looks
// normal. It names no API of the user's and no layer, so it carries across programs.
//
// What is judged: the collector's claim on each parameter state written at an optimizer's step,
// "_TRAINCHECK_forward_through_ddp" (python/traincheck/tracking/tracker.py): made for the parameters of
// a tracked model that a DistributedDataParallel wraps and that ran forward passes with gradients enabled
// in training mode since that optimizer's previous step; true when every such forward ran inside the
// wrapper's forward (torch's `DistributedDataParallel._active_ddp_module` is set there). A forward
// without gradients (rank 0 validating `model.module` under `no_grad`) or in eval mode makes no claim.
//
// Params: [VarTypeParam(t, "_TRAINCHECK_forward_through_ddp")], t the parameters' var type.
// Precondition group: "var" = [the state record], no field given to the learner.
//
// Example invariant:
//   {"relation": "ForwardThroughWrapperRelation", "params": [{"param_type": "VarTypeParam",
//      "var_type": "torch.nn.Parameter", "attr_name": "_TRAINCHECK_forward_through_ddp"}],
//    "precondition": {"var": {"inverted": false, "preconditions": [{"clauses": "Unconditional"}]}}, ...}
//
// Inference and check: StepClaimRelation's (step_claims.h), as GradientResetRelation's; one violation
// per optimizer step. Cost: one lookup of a field per state record of the var type.
#include "relations/forward_through_wrapper.h"

namespace traincheck {

ForwardThroughWrapperRelation::ForwardThroughWrapperRelation()
    : StepClaimRelation({.relation = "ForwardThroughWrapperRelation",
                         .attribute = kAttribute,
                         .text = " belongs to a model whose training forward passes run through its DistributedDataParallel wrapper (gradients averaged across ranks)",
                         .display = "'s model is called through its DDP wrapper"}) {}

}  // namespace traincheck
