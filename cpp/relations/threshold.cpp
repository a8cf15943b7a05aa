// ThresholdRelation
//
// Learns: a number among the tensors an API returns is bounded by a numeric argument whose name says
// so: at most an argument named *max* (max_new_tokens, max_length), at least one named *min*; e.g.
// the generated response length <= max_new_tokens.
//
// Params: max case [InputOutputParam(name=<arg>, index=null, type="<class 'int'>", additional_path=null,
// is_input=true), APIParam(f), InputOutputParam("output_tensors", index, [attr(, element)])]; min case
// the two InputOutputParams swapped. Either way params[0] >= params[2].
// Precondition group: "pre_event" = [f's pre-record] (enriched with context managers).
//
// Example invariant:
//   {"relation": "ThresholdRelation", "params": [
//      {"param_type": "InputOutputParam", "name": "max_new_tokens", "index": null, "type": "<class 'int'>",
//       "additional_path": null, "api_name": "...generate", "is_input": true},
//      {"param_type": "APIParam", "api_full_name": "...generate"},
//      {"param_type": "InputOutputParam", "name": "output_tensors", "index": 0, "type": "torch.Tensor",
//       "additional_path": ["shape", 1], "api_name": "...generate", "is_input": false}], ...}
//
// Arguments are bound by name with the recorded signatures, defaults included (api_signatures.json;
// without it positional arguments keep their index as name and defaults are unknown). Numbers are int
// or float, never bool. A call whose argument or output value is missing is neither an example nor
// checked; exception and incomplete calls are neither.
//
// Generation: per complete call, each (numeric argument named *max*/*min*, numeric output value) pair
// on the bounded side and within 20% of the argument (relative to it, as the original; a zero bound
// never qualifies) is a hypothesis; its examples are every call's verdict.
//
// Differences from the original: bools are not numbers; the offline check reports every violating
// call, not only the first; a violation's records are [pre, post].
#include "relations/threshold.h"

#include <map>

#include "relations/call_checks.h"
#include "relations/consistent_output.h"

namespace traincheck {

namespace {


// The number a recorded value ({type: payload} or a bare value) holds; nullopt for anything else.
std::optional<double> number_in(const Value& v) {
  const Value* payload = &v;
  if (v.is_object() && v.as_object().size() == 1) payload = &v.as_object().front().value;
  if (payload->is_number() && !payload->is_nan()) return payload->as_double();
  return std::nullopt;
}

std::optional<double> argument_value(const Record& pre, std::string_view name, const ApiSignatures& signatures) {
  for (const Member& m : signatures.bind(pre, /*skip_self=*/true, /*with_defaults=*/true))
    if (key_name(m.key) == name) return number_in(m.value);
  return std::nullopt;
}

std::optional<double> output_value(const Record& post, const IoPath& path) {
  const Value* v = tensor_value_at(ConsistentOutputRelation::returned_tensors(post), path);
  if (v == nullptr || !v->is_number() || v->is_nan()) return std::nullopt;
  return v->as_double();
}

Param argument_param(const std::string& name, const Value& recorded, std::string_view function) {
  Param p;
  p.type = ParamType::InputOutput;
  p.name = Name(name);
  p.index = Value();
  const Value* payload = recorded.is_object() && recorded.as_object().size() == 1 ? &recorded.as_object().front().value : &recorded;
  p.io_type = Name(payload->is_int() ? "<class 'int'>" : "<class 'float'>");
  p.additional_path = Value();
  p.api_name = Name(function);
  p.is_input = true;
  return p;
}

Hypothesis make_hypothesis(std::string_view function, const std::string& argument, const Value& recorded, const IoPath& out,
                           bool is_max) {
  Hypothesis h;
  h.invariant.relation = "ThresholdRelation";
  Param in = argument_param(argument, recorded, function);
  Param output = tensor_path_param(out, function, false);
  if (is_max) h.invariant.params = {std::move(in), Param::api(function), std::move(output)};
  else h.invariant.params = {std::move(output), Param::api(function), std::move(in)};
  h.group_names = {std::string(kPreEventGroup)};
  h.invariant.text_description = SharedText() + h.invariant.params[1].api_full_name + ": " +
                                 describe_tensor_path("output", out) + (is_max ? " <= " : " >= ") + "argument " + argument;
  return h;
}

void collect(const TraceStore& trace, const ThresholdRelation::Bound& bound, std::string_view function, Hypothesis& h) {
  for (uint32_t ci : complete_calls(trace, function)) {
    const CallEvent& call = trace.calls()[ci];
    const std::optional<bool> within =
        ThresholdRelation::call_within(trace.record(call.pre), trace.record(call.post), bound, trace.signatures());
    if (within) (*within ? h.positives : h.negatives).push_back(Example{&trace, {{call.pre}}});
  }
}

}  // namespace

std::optional<ThresholdRelation::Bound> ThresholdRelation::bound_of(const Invariant& inv) {
  if (inv.params.size() != 3 || inv.params[1].type != ParamType::Api) return std::nullopt;
  const Param& first = inv.params[0];
  const Param& last = inv.params[2];
  const bool is_max = first.type == ParamType::InputOutput && first.is_input;
  const Param& argument = is_max ? first : last;
  const Param& output = is_max ? last : first;
  if (argument.type != ParamType::InputOutput || !argument.is_input || argument.name.empty()) return std::nullopt;
  std::optional<IoPath> path = tensor_path_of(output);
  if (!path || output.is_input) return std::nullopt;
  return Bound{argument.name, std::move(*path), is_max};
}

std::optional<bool> ThresholdRelation::call_within(const Record& pre, const Record& post, const Bound& bound,
                                                   const ApiSignatures& signatures) {
  const std::optional<double> limit = argument_value(pre, bound.argument, signatures);
  const std::optional<double> value = output_value(post, bound.output);
  if (!limit || !value) return std::nullopt;
  return bound.is_max ? *value <= *limit : *value >= *limit;
}

std::vector<Hypothesis> ThresholdRelation::generate(const TraceStore& trace) const {
  std::vector<Hypothesis> out;
  for (std::string_view function : trace.functions()) {
    std::map<std::string, std::pair<Bound, Value>> found;  // by the params' JSON: deterministic order
    const std::vector<uint32_t> calls = complete_calls(trace, function);
    for (uint32_t ci : calls) {
      const CallEvent& call = trace.calls()[ci];
      const std::vector<const Object*> outputs = ConsistentOutputRelation::returned_tensors(trace.record(call.post));
      if (outputs.empty()) continue;
      for (const Member& arg : trace.signatures().bind(trace.record(call.pre), true, true)) {
        const std::string_view name = key_name(arg.key);
        const bool max_name = name.find("max") != std::string_view::npos;
        const bool min_name = name.find("min") != std::string_view::npos;
        const std::optional<double> limit = number_in(arg.value);
        if ((!max_name && !min_name) || !limit || *limit == 0) continue;
        for_each_tensor_value(outputs, [&](const IoPath& path, const Value& v) {
          if (!v.is_number()) return;
          const double value = v.as_double();
          for (const bool is_max : {true, false}) {
            if (is_max ? !max_name : !min_name) continue;
            const bool close = is_max ? value <= *limit && (*limit - value) / *limit <= kCloseness
                                      : value >= *limit && (value - *limit) / *limit <= kCloseness;
            if (!close) continue;
            const Hypothesis h = make_hypothesis(function, std::string(name), arg.value, path, is_max);
            std::string key;
            for (const Param& p : h.invariant.params) key += p.to_json();
            found.try_emplace(key, Bound{std::string(name), path, is_max}, arg.value);
          }
        });
      }
    }
    for (const auto& [key, bound_and_value] : found) {
      const auto& [bound, recorded] = bound_and_value;
      Hypothesis h = make_hypothesis(function, bound.argument, recorded, bound.output, bound.is_max);
      collect(trace, bound, function, h);
      out.push_back(std::move(h));
    }
  }
  return out;
}

void ThresholdRelation::collect_examples(const TraceStore& trace, Hypothesis& h) const {
  if (const std::optional<Bound> bound = bound_of(h.invariant)) collect(trace, *bound, h.invariant.params[1].api_full_name, h);
}

CheckResult ThresholdRelation::check(const TraceStore& trace, const Invariant& inv, const CheckOptions& options) const {
  const std::optional<Bound> bound = bound_of(inv);
  if (!bound) return {};
  return check_calls(trace, inv, inv.params[1].api_full_name, options, [&](const Record& pre, const Record& post) {
    return call_within(pre, post, *bound, trace.signatures());
  });
}

std::unique_ptr<OnlineCheck> ThresholdRelation::make_online_check(const Invariant& inv, const ApiSignatures* signatures) const {
  const std::optional<Bound> bound = bound_of(inv);
  if (!bound) return std::make_unique<CallOnlineCheck>(std::string(), std::nullopt, nullptr);
  static const ApiSignatures kNoSignatures;
  const ApiSignatures* sigs = signatures != nullptr ? signatures : &kNoSignatures;
  return std::make_unique<CallOnlineCheck>(inv.params[1].api_full_name, pre_event_group(inv),
                                           [b = *bound, sigs](const Record& pre, const Record& post) {
                                             return call_within(pre, post, b, *sigs);
                                           });
}

std::string ThresholdRelation::display_name(const Invariant& inv) const {
  const std::optional<Bound> bound = bound_of(inv);
  if (!bound) return {};
  return short_api_name(inv.params[1].api_full_name) + "(): " + describe_tensor_path("output", bound->output) +
         (bound->is_max ? " <= " : " >= ") + bound->argument;
}

}  // namespace traincheck
