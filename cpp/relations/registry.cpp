#include "relations/registry.h"

#include <algorithm>

#include "relations/api_contain.h"
#include "relations/consistency.h"
#include "relations/consistent_input_output.h"
#include "relations/consistent_output.h"
#include "relations/distinct_argument.h"
#include "relations/eval_mode_in_validation.h"
#include "relations/forward_through_wrapper.h"
#include "relations/function_order.h"
#include "relations/gradient_clipped.h"
#include "relations/gradient_reset.h"
#include "relations/gradient_reset_once.h"
#include "relations/module_mode_relation.h"
#include "relations/optimizer_has_gradients.h"
#include "relations/optimizer_steps.h"
#include "relations/parameter_gets_gradients.h"
#include "relations/sampler_epoch_advances.h"
#include "relations/threshold.h"
#include "relations/training_mode.h"

namespace traincheck {

const std::vector<const Relation*>& implemented_relations() {
  static const ApiContainRelation api_contain;
  static const ConsistencyRelation consistency;
  static const ConsistentOutputRelation consistent_output;
  static const ConsistentInputOutputRelation consistent_input_output;
  static const FunctionOrderRelation function_cover(FunctionOrder::Cover);
  static const FunctionOrderRelation function_lead(FunctionOrder::Lead);
  static const DistinctArgumentRelation distinct_argument;
  static const ThresholdRelation threshold;
  static const ModuleModeRelation module_mode;  // ours: after the original's pool
  static const GradientResetRelation gradient_reset;  // ours
  static const TrainingModeRelation training_mode;    // ours
  static const OptimizerHasGradientsRelation optimizer_has_gradients;  // ours
  static const GradientResetOnceRelation gradient_reset_once;          // ours
  static const GradientClippedRelation gradient_clipped;               // ours
  static const ParameterGetsGradientsRelation parameter_gets_gradients;  // ours
  static const EvalModeInValidationRelation eval_mode_in_validation;    // ours
  static const ForwardThroughWrapperRelation forward_through_wrapper;  // ours
  static const SamplerEpochAdvancesRelation sampler_epoch_advances;    // ours
  static const OptimizerStepsRelation optimizer_steps;                 // ours
  static const std::vector<const Relation*> all = {
      &api_contain,       &consistency, &consistent_output, &consistent_input_output, &function_cover,
      &function_lead,     &distinct_argument, &threshold,   &module_mode,             &gradient_reset,
      &training_mode,     &optimizer_has_gradients,         &gradient_reset_once,     &gradient_clipped,
      &parameter_gets_gradients, &eval_mode_in_validation, &forward_through_wrapper, &sampler_epoch_advances,
      &optimizer_steps};
  return all;
}

const RelationNames& relation_names() {
  static const RelationNames names = [] {
    RelationNames out;
    for (const Relation* r : implemented_relations()) out.emplace_back(r->name());
    return out;
  }();
  return names;
}

const Relation* find_relation(std::string_view name) {
  for (const Relation* r : implemented_relations())
    if (r->name() == name) return r;
  return nullptr;
}

namespace {

// Private functions and private modules ("._" in the original's list) can be children, never parents.
// A private *class* is different: `torch.nn.modules.batchnorm._BatchNorm.forward` is the public
// forward of every BatchNorm layer, defined on their private base class, and the original's plain
// "._" substring test drops it (and with it every invariant about BatchNorm's calls). A component
// "_Upper..." that is not the last one names such a class and is kept; `torch._C` (one letter) is a
// module. The C extension module `_C` is private, but a class of it holds the public methods of the
// Python class built on it: `torch._C.TensorBase.normal_` is `Tensor.normal_` (--instr-descriptors
// records it under the defining C class, as the original names it), so `_C.<Class>.<method>` is kept;
// `_C`'s own functions and submodules (`torch._C._nn.linear`) stay private.
bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }

bool has_private_component(std::string_view fn) {
  size_t start = 0;
  while (start < fn.size()) {
    size_t end = fn.find('.', start);
    const bool last = end == std::string_view::npos;
    if (last) end = fn.size();
    const std::string_view part = fn.substr(start, end - start);
    if (start > 0 && !part.empty() && part[0] == '_') {
      const bool private_class = !last && part.size() > 2 && is_upper(part[1]);
      const std::string_view rest = last ? std::string_view() : fn.substr(end + 1);
      const bool extension_class = part == "_C" && !rest.empty() && is_upper(rest[0]) &&
                                   rest.find('.') != std::string_view::npos;
      if (!private_class && !extension_class) return true;
    }
    start = end + 1;
  }
  return false;
}

}  // namespace

bool is_analysis_skipped_function(std::string_view fn) {
  static constexpr std::string_view kSkip[] = {
      "cuda.is_available",
      "torch.get_default_dtype",
      "torch._VariableFunctionsClass",
      "torch.nn.modules.module.Module._call_impl",
      "torch.nn.modules.module.Module._wrapped_impl",
      "torch.nn.modules.module.Module._wrapped_call_impl",
      "torch.cuda._is_compiled",
      "torch.is_grad_enabled",
      "torch._ops.OpOverload",
      "torch.nn.modules.module.Module",
      "torch.utils.data._utils",
      "torch.distributed.utils._to_kwargs",
      "torch.distributed.utils._recursive_to",
      "torch.nn.parallel.scatter_gather._is_namedtuple",
      "torch.nn._reduction",
      "torch.nn.functional",
      "torch._tensor.Tensor.backward",
      "torch.autograd",
      "torch.optim.optimizer.Optimizer._optimizer_step_code",
      "torch.optim.optimizer._get_value",
      "torch.overrides",
      "<locals>",
  };
  if (std::any_of(std::begin(kSkip), std::end(kSkip), [&](std::string_view s) { return fn.find(s) != std::string_view::npos; }))
    return true;
  return has_private_component(fn);
}

}  // namespace traincheck
