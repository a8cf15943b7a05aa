// ModuleModeRelation (ours; the original has no such relation)
//
// Learns: every call of a module's forward `f` (that satisfies the precondition) runs on a module in
// mode m: "Linear.forward runs in training mode" in training steps, "Dropout.forward runs in eval mode"
// in validation. A model left in eval mode after validation, or a discriminator switched to eval mode
// for a sanity check and never back, breaks it at its first training step, also where no dropout or
// batch norm would show it, and also across programs: every program's Linear runs in training mode
// when it trains, whatever holds the Linear (APIContain's mode constraints need the same parent).
//
// Params: [APIParam(f, arguments {"args": {"self": {"torch.nn.modules.module.Module": {"training": m}}}})]:
// the mode as an argument constraint on `self` (relations/module_mode.h), so selective mode records
// only `self` of f, as for any constrained argument.
// Precondition group: "pre_event" = [f's pre-record] (enriched with context managers): the stage, and
// no_grad where a program validates without a stage of its own.
//
// Example invariant:
//   {"relation": "ModuleModeRelation", "params": [{"param_type": "APIParam",
//      "api_full_name": "torch.nn.modules.linear.Linear.forward", "arguments": {"args": {"self":
//      {"torch.nn.modules.module.Module": {"training": true}}}, "func_name": "torch.nn.modules.linear.Linear.forward"}}],
//    "precondition": {"pre_event": {"inverted": false, "preconditions": [{"clauses": [
//      {"type": "constant", "prop_name": "meta_vars.stage", "values": ["training"], ...}]}]}}, ...}
//
// Which calls: the complete calls of functions named `*.forward` whose pre-record's argument 0 is a
// recorded module (a bound call). A mode seen in at least two calls of one trace is a hypothesis; its
// positives are the calls in that mode, its negatives the calls in the other, so the precondition is
// what tells the two apart (the stage, a context manager), and a program that runs the same layer in
// both modes with nothing to tell them apart (a frozen batch norm) gives no invariant. The invariant
// holds only in the stages its positives were seen in (valid_stages, the engine's stage restriction, as
// for APIContain): the programs it was learned from may never have run the layer in the other mode,
// and without negatives the precondition alone would be Unconditional, judging a sanity check in eval
// mode during validation too. Examples come from every stage, so the learned precondition holds for
// the calls of every stage the merged hypothesis claims.
//
// Cost: one pass over each forward's calls per hypothesis (two per function at most).
//
// Online: CallOnlineCheck (call_checks.cpp) at the post-record, the verdict read from the pre-record.
#include "relations/module_mode_relation.h"

#include <optional>
#include <set>

#include "invariant/precondition.h"
#include "relations/call_checks.h"
#include "relations/consistent_output.h"
#include "relations/module_mode.h"

namespace traincheck {

namespace {

bool is_forward(std::string_view function) { return function.ends_with(".forward"); }

Param mode_param(std::string_view function, bool training) {
  Param p = Param::api(std::string(function));
  p.arguments = make_object({{"args", make_object({{"self", module_mode_value(training)}})},
                             {"func_name", Value::string(std::string(function))}});
  return p;
}

Hypothesis make_hypothesis(std::string_view function, bool training) {
  Hypothesis h;
  h.invariant.relation = "ModuleModeRelation";
  h.invariant.params = {mode_param(function, training)};
  h.group_names = {std::string(kPreEventGroup)};
  h.invariant.text_description =
      SharedText() + Name(function) + " runs on a module in " + (training ? "training" : "eval") + " mode";
  return h;
}

struct Target {
  std::string_view function;
  bool training;
};

// The function and mode an invariant names; nullopt for a malformed one (no verdict, never triggered).
std::optional<Target> target_of(const Invariant& inv) {
  if (inv.params.size() != 1 || inv.params[0].type != ParamType::Api || !inv.params[0].arguments) return std::nullopt;
  const Value* args = inv.params[0].arguments->find("args");
  const Value* self = args != nullptr && args->is_object() ? args->find("self") : nullptr;
  const std::optional<bool> training = self != nullptr ? training_flag(*self) : std::nullopt;
  if (!training) return std::nullopt;
  return Target{inv.params[0].api_full_name, *training};
}

// The verdict shared by inference and both checks: nullopt when the call has no recorded module `self`.
std::optional<bool> runs_in_mode(const Record& pre, bool training) {
  const std::optional<bool> mode = self_mode(pre);
  if (!mode) return std::nullopt;
  return *mode == training;
}

void collect(const TraceStore& trace, const std::vector<uint32_t>& calls, Hypothesis& h, bool training) {
  for (uint32_t ci : calls) {
    const CallEvent& call = trace.calls()[ci];
    const std::optional<bool> ok = runs_in_mode(trace.record(call.pre), training);
    if (!ok) continue;
    (*ok ? h.positives : h.negatives).push_back(Example{&trace, {{call.pre}}});
  }
}

}  // namespace

std::vector<Hypothesis> ModuleModeRelation::generate(const TraceStore& trace) const {
  std::vector<Hypothesis> out;
  for (std::string_view function : trace.functions()) {
    if (!is_forward(function)) continue;
    const std::vector<uint32_t> calls = complete_calls(trace, function);
    size_t in_mode[2] = {0, 0};  // eval, training
    for (uint32_t ci : calls)
      if (const std::optional<bool> mode = self_mode(trace.record(trace.calls()[ci].pre))) ++in_mode[*mode];
    for (bool training : {true, false}) {
      if (in_mode[training] < 2) continue;
      Hypothesis h = make_hypothesis(function, training);
      collect(trace, calls, h, training);
      std::set<std::string> stages;
      for (const Example& e : h.positives) stages.insert(std::string(trace.record(e.groups[0][0]).stage));
      h.valid_stages.assign(stages.begin(), stages.end());
      out.push_back(std::move(h));
    }
  }
  return out;
}

void ModuleModeRelation::collect_examples(const TraceStore& trace, Hypothesis& h) const {
  const std::optional<Target> target = target_of(h.invariant);
  if (!target) return;
  collect(trace, complete_calls(trace, target->function), h, target->training);
}

CheckResult ModuleModeRelation::check(const TraceStore& trace, const Invariant& inv, const CheckOptions& options) const {
  const std::optional<Target> target = target_of(inv);
  if (!target) return {};
  return check_calls(trace, inv, target->function, options,
                     [training = target->training](const Record& pre, const Record&) { return runs_in_mode(pre, training); });
}

std::unique_ptr<OnlineCheck> ModuleModeRelation::make_online_check(const Invariant& inv, const ApiSignatures*) const {
  const std::optional<Target> target = target_of(inv);
  if (!target) return std::make_unique<CallOnlineCheck>(std::string(), std::nullopt, nullptr);
  return std::make_unique<CallOnlineCheck>(
      std::string(target->function), pre_event_group(inv),
      [training = target->training](const Record& pre, const Record&) { return runs_in_mode(pre, training); });
}

std::string ModuleModeRelation::display_name(const Invariant& inv) const {
  const std::optional<Target> target = target_of(inv);
  if (!target) return {};
  return short_api_name(target->function) + "() runs in " + (target->training ? "training" : "eval") + " mode";
}

}  // namespace traincheck
