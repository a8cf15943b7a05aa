// The tracker's claims at an optimizer's step, declared once. A claim is a bool the tracker judges per
// parameter when an optimizer steps (python/traincheck/tracking/tracker.py) and writes as the attribute
// `_TRAINCHECK_<name>` of the parameter's state record (docs/formats.md §Variable state records); a
// StepClaimRelation (relations/step_claims.h) learns that it always holds and checks it. Everything that
// carries a claim reads this table: the event encoding (two VarStateFlags bits per claim, from `bit`), the
// formatter that writes the attribute, the online feed's line templates
// (check/online/var_line_templates.cpp), the `_core` binding (`step_claims()`, and `record_var_states`'
// `claims` mapping keyed by name) and, through `_core`, the tracker. Header only, no dependency: the
// recorder and the analyzer both include it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string_view>

namespace traincheck {

struct StepClaim {
  std::string_view name;       // the key the tracker passes it under, e.g. "grad_reset"
  std::string_view attribute;  // "_TRAINCHECK_" + name, the state record's attribute
  uint32_t bit;                // its place in the event encoding: flags kVarHasClaim(bit), kVarClaimHolds(bit)
  std::string_view meaning;    // when the tracker writes it, and what true says
};

// Bits are the table's positions; a new claim goes at the end (the encoding is the recorder's own, but
// keeping positions keeps traces of one build comparable event by event).
inline constexpr StepClaim kStepClaims[] = {
    {"grad_reset", "_TRAINCHECK_grad_reset", 0,
     "for a parameter the stepping optimizer holds, with a gradient at this step and at its previous one: its "
     "gradient was reset since (GradientResetRelation)"},
    {"model_training", "_TRAINCHECK_model_training", 1,
     "for a parameter with a gradient: the model it was tracked under is in training mode (TrainingModeRelation)"},
    {"optimizer_has_gradients", "_TRAINCHECK_optimizer_has_gradients", 2,
     "for every parameter the stepping optimizer holds: some parameter it holds has a gradient "
     "(OptimizerHasGradientsRelation)"},
    {"grad_reset_once", "_TRAINCHECK_grad_reset_once", 3,
     "with grad_reset: at most one reset threw away a computed gradient since the previous step "
     "(GradientResetOnceRelation)"},
    {"grad_clipped", "_TRAINCHECK_grad_clipped", 4,
     "for a parameter whose gradient was clipped since the previous step: the gradient stepped on is the one "
     "the last clipping left (GradientClippedRelation)"},
    {"gets_gradients", "_TRAINCHECK_gets_gradients", 5,
     "for a parameter an optimizer holds that required gradients when the optimizer was built: from its fifth "
     "step, at a step with some gradient to apply, while the parameter requires gradients, it has had a gradient "
     "at one of that optimizer's steps; and at the end of the run, it had one at some step "
     "(ParameterGetsGradientsRelation)"},
    {"eval_in_validation", "_TRAINCHECK_eval_in_validation", 6,
     "for a parameter whose model, holding a layer that depends on its mode (dropout, running statistics), ran "
     "forward passes without gradients in an evaluation loop since the stepping optimizer's previous step: all of "
     "them ran in eval mode (EvalModeInValidationRelation)"},
    {"forward_through_ddp", "_TRAINCHECK_forward_through_ddp", 7,
     "for a parameter of a model that a DistributedDataParallel wraps, which ran forward passes with "
     "gradients in training mode since the stepping optimizer's previous step: all of them ran inside the "
     "wrapper (ForwardThroughWrapperRelation)"},
    {"sampler_epoch_advanced", "_TRAINCHECK_sampler_epoch_advanced", 8,
     "for every parameter the stepping optimizer holds, at the first step after a shuffling DistributedSampler "
     "began a pass, when an earlier pass of it was trained on: the two passes' epochs differ "
     "(SamplerEpochAdvancesRelation)"},
    {"optimizer_stepped", "_TRAINCHECK_optimizer_stepped", 9,
     "at the end of the run, for a parameter an optimizer was built to train (it required gradients then), "
     "when that optimizer stepped or some parameter it was built to train has a gradient: the optimizer "
     "stepped (OptimizerStepsRelation)"},
};
inline constexpr size_t kStepClaimCount = std::size(kStepClaims);

// The claim named `name`; naming an undeclared claim fails to compile.
consteval const StepClaim& step_claim(std::string_view name) {
  for (const StepClaim& claim : kStepClaims)
    if (claim.name == name) return claim;
  throw "step_claim: no such claim in kStepClaims";
}

namespace step_claims_detail {
consteval bool well_formed() {
  constexpr std::string_view prefix = "_TRAINCHECK_";
  for (size_t i = 0; i < kStepClaimCount; ++i) {
    const StepClaim& c = kStepClaims[i];
    if (c.bit != i || !c.attribute.starts_with(prefix) || c.attribute.substr(prefix.size()) != c.name) return false;
    for (size_t j = 0; j < i; ++j)
      if (kStepClaims[j].name == c.name) return false;
  }
  return true;
}
}  // namespace step_claims_detail
static_assert(step_claims_detail::well_formed(),
              "kStepClaims: bits are positions, names unique, attribute is \"_TRAINCHECK_\" + name");

}  // namespace traincheck
