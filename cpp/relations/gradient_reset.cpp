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
// Inference: per var type, the state records with a claim; a claim of a reset is a positive, a claim of
// none a negative. A hypothesis needs two positives (the engine's rule) and no negatives.
//
// Check (online, and offline as its replay, relations/replay_check.h): a claim of no reset whose record
// satisfies the precondition is a violation; the parameters of one optimizer step share the dump's
// time, so one violation per step is reported (its first parameter), not one per parameter of a large
// model.
//
// Cost: one lookup of a field per state record of the var type.
#include "relations/gradient_reset.h"

#include <map>

#include "relations/replay_check.h"
#include "trace/var_state.h"

namespace traincheck {

namespace {

KeyId attribute_key() {
  static const KeyId key = intern_key(std::string(kAttributeFieldPrefix) + std::string(GradientResetRelation::kAttribute));
  return key;
}

Hypothesis make_hypothesis(std::string_view var_type) {
  Hypothesis h;
  h.invariant.relation = "GradientResetRelation";
  h.invariant.params = {Param::var_type_param(var_type, GradientResetRelation::kAttribute)};
  h.group_names = {std::string(GradientResetRelation::kGroup)};
  h.invariant.text_description = SharedText() + Name(var_type) +
                                 ".grad is reset (zero_grad) between two steps of the optimizer holding it";
  return h;
}

// The claims of one trace, per var type: (positives, negatives).
using Claims = std::map<std::string_view, std::pair<std::vector<uint32_t>, std::vector<uint32_t>>>;

Claims claims_of(const TraceStore& trace, std::string_view only_type = {}) {
  Claims out;
  const std::vector<Record>& records = trace.records();
  for (uint32_t i = 0; i < records.size(); ++i) {
    const Record& r = records[i];
    if (r.type != RecordType::StateChange || (!only_type.empty() && r.var_type != only_type)) continue;
    const std::optional<bool> reset = GradientResetRelation::was_reset(r);
    if (!reset) continue;
    auto& [positives, negatives] = out[r.var_type.view()];
    (*reset ? positives : negatives).push_back(i);
  }
  return out;
}

void add_examples(const TraceStore& trace, const std::vector<uint32_t>& records, std::vector<Example>& into) {
  for (uint32_t i : records) into.push_back(Example{&trace, {{i}}});
}

const std::string* var_type_of(const Invariant& inv) {
  if (inv.params.size() != 1 || inv.params[0].type != ParamType::VarType ||
      inv.params[0].attr_name != GradientResetRelation::kAttribute)
    return nullptr;
  return &inv.params[0].var_type.str();
}

}  // namespace

std::optional<bool> GradientResetRelation::was_reset(const Record& state) {
  const Value* v = state.get(attribute_key());
  if (v == nullptr || !v->is_bool()) return std::nullopt;
  return v->as_bool();
}

RecordNeeds GradientResetRelation::record_needs(const Invariant& inv) const {
  RecordNeeds needs;
  if (const std::string* var_type = var_type_of(inv))
    for (const char* api : {"torch.optim.optimizer.Optimizer.zero_grad", "torch.nn.modules.module.Module.zero_grad"})
      needs.var_types_in_apis.emplace_back(api, *var_type);
  return needs;
}

std::vector<Hypothesis> GradientResetRelation::generate(const TraceStore& trace) const {
  std::vector<Hypothesis> out;
  for (const auto& [var_type, claims] : claims_of(trace)) {
    const auto& [positives, negatives] = claims;
    if (positives.empty()) continue;
    Hypothesis h = make_hypothesis(var_type);
    add_examples(trace, positives, h.positives);
    add_examples(trace, negatives, h.negatives);
    out.push_back(std::move(h));
  }
  return out;
}

void GradientResetRelation::collect_examples(const TraceStore& trace, Hypothesis& h) const {
  const std::string* var_type = var_type_of(h.invariant);
  if (var_type == nullptr) return;
  for (const auto& [type, claims] : claims_of(trace, *var_type)) {
    add_examples(trace, claims.first, h.positives);
    add_examples(trace, claims.second, h.negatives);
  }
}

CheckResult GradientResetRelation::check(const TraceStore& trace, const Invariant& inv, const CheckOptions& options) const {
  std::unique_ptr<OnlineCheck> check = make_online_check(inv);
  return replay_check(trace, inv, *check, options);
}

std::unique_ptr<OnlineCheck> GradientResetRelation::make_online_check(const Invariant& inv, const ApiSignatures*) const {
  const std::string* var_type = var_type_of(inv);
  std::optional<PreconditionGroup> precondition;
  if (const PreconditionGroup* g = inv.precondition_group(kGroup)) precondition = *g;
  return std::make_unique<GradientResetOnlineCheck>(var_type ? *var_type : std::string(), std::move(precondition));
}

std::string GradientResetRelation::display_name(const Invariant& inv) const {
  const std::string* var_type = var_type_of(inv);
  if (var_type == nullptr) return {};
  return short_type_name(*var_type) + ".grad is reset (zero_grad) between optimizer steps";
}

GradientResetOnlineCheck::GradientResetOnlineCheck(std::string var_type, std::optional<PreconditionGroup> precondition)
    : var_type_(std::move(var_type)), var_type_name_(var_type_), precondition_(std::move(precondition)) {}

OnlineInterest GradientResetOnlineCheck::interest() const {
  OnlineInterest i;
  i.all_records = false;
  if (!var_type_.empty()) i.var_types = {var_type_};
  return i;
}

void GradientResetOnlineCheck::on_record(const Record& r, std::vector<OnlineViolation>& violations) {
  if (var_type_.empty() || r.type != RecordType::StateChange || r.var_type != var_type_name_) return;
  const std::optional<bool> reset = GradientResetRelation::was_reset(r);
  if (!reset || (precondition_ && !precondition_->holds_on(r))) return;
  triggered_ = true;
  if (*reset || (r.process_id == violated_process_ && r.time == violated_time_)) return;
  violated_process_ = r.process_id;
  violated_time_ = r.time;
  violations.push_back(OnlineViolation{{r}});
}

}  // namespace traincheck
