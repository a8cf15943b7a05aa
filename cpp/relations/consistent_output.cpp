// ConsistentOutputRelation
//
// Learns: every call of API f (that satisfies the precondition) returns tensors whose attribute `attr`
// equals a constant; e.g. relu returns dtype torch.float16 under autocast.
//
// Params: [APIParam(f), VarTypeParam("torch.Tensor", attr, const_value=v)].
// Precondition group: "pre_event" = [f's pre-record] (enriched with context managers).
//
// Example invariant:
//   {"relation": "ConsistentOutputRelation", "params": [
//      {"param_type": "APIParam", "api_full_name": "torch.nn.functional.relu"},
//      {"param_type": "VarTypeParam", "var_type": "torch.Tensor", "attr_name": "dtype", "const_value": "torch.float16"}],
//    "precondition": {"pre_event": {"inverted": false, "preconditions": [{"clauses": [
//      {"type": "exist", "prop_name": "meta_vars.context_managers.torch.amp.autocast_mode.autocast", ...}]}]}}, ...}
//
// A call's verdict (outputs_match, shared by inference and both checks): it returned at least one
// tensor and every returned tensor has `attr` equal to v. A call without returned tensors, including a
// post-record without return_values, fails it, as the original's check flags it; a tensor lacking the
// attribute fails it (the original's pd.NA). Exception and incomplete calls are neither examples nor
// checked.
//
// Cost: O(calls x returned attributes) to count the hypotheses, plus one pass over the function's calls
// per hypothesis for its examples.
//
// Online: CallOnlineCheck (call_checks.cpp) applies the same verdict at the post-record. Autocast
// preconditions hold online through the online checker's context-manager tracking;
// tests/cpp/relations/consistent_output_test.cpp checks the original's autocast invariant offline, with
// a bare online check (not judged) and through the online checker (the offline verdict).
//
// Differences from the original:
//   - every call is examined (no sample of 1000 calls per function);
//   - a (attr, value) pair becomes a hypothesis only when at least two calls of one trace return it
//     (the engine drops hypotheses with one positive; the original would keep one seen once in each
//     of two traces), and the tool's id attributes (_TRAINCHECK_*_ID) are no hypotheses: object ids
//     differ run to run;
//   - in inference a call returning several tensors is positive only if all agree (the check's rule),
//     so a call returning values and indices is a negative for both dtypes;
//   - the offline check reports every violating call, not only the first (docs/differences.md §Checking); a
//     violation's records are [pre, post].
#include "relations/consistent_output.h"

#include <map>
#include <unordered_map>

#include "invariant/precondition.h"
#include "relations/call_checks.h"

namespace traincheck {

namespace {

constexpr std::string_view kTensorType = "torch.Tensor";

// Values a hypothesis can hold: scalars and lists of scalars (make_hashable turns lists into tuples).
bool is_constant_candidate(const Value& v) {
  if (v.is_nan()) return false;
  if (v.is_hashable()) return true;
  if (!v.is_array()) return false;
  for (const Value& x : v.as_array())
    if (!x.is_hashable()) return false;
  return true;
}

Hypothesis make_hypothesis(std::string_view function, std::string_view attr, const Value& value) {
  Hypothesis h;
  h.invariant.relation = "ConsistentOutputRelation";
  Param out = Param::var_type_param(kTensorType, attr);
  out.const_value = value;
  h.invariant.params = {Param::api(function), std::move(out)};
  h.group_names = {std::string(kPreEventGroup)};
  h.invariant.text_description = SharedText() + h.invariant.params[0].api_full_name + " returns tensors whose " +
                                 h.invariant.params[1].attr_name + " is " + to_json(value);
  return h;
}

struct Target {
  std::string_view function;
  const std::string* attr;
  const Value* value;
};

std::optional<Target> target_of(const Invariant& inv) {
  if (inv.params.size() < 2 || inv.params[0].type != ParamType::Api) return std::nullopt;
  const Param& out = inv.params[1];
  if (out.type != ParamType::VarType || !out.const_value) return std::nullopt;
  return Target{inv.params[0].api_full_name, &out.attr_name.str(), &*out.const_value};
}

void collect(const TraceStore& trace, const std::vector<uint32_t>& calls, Hypothesis& h) {
  const Param& out = h.invariant.params[1];
  for (uint32_t ci : calls) {
    const CallEvent& call = trace.calls()[ci];
    Example e{&trace, {{call.pre}}};
    const bool ok = ConsistentOutputRelation::outputs_match(trace.record(call.post), out.attr_name, *out.const_value);
    (ok ? h.positives : h.negatives).push_back(std::move(e));
  }
}

}  // namespace

std::vector<const Object*> ConsistentOutputRelation::returned_tensors(const Record& post) {
  std::vector<const Object*> out;
  const Value* rv = post.get(keys().return_values);
  if (rv == nullptr) return out;
  auto add = [&](const Value& v) {
    if (const Object* t = tensor_payload(v)) out.push_back(t);
  };
  if (rv->is_array()) {
    for (const Value& item : rv->as_array()) add(item);
  } else {
    add(*rv);
  }
  return out;
}

const Object* ConsistentOutputRelation::tensor_payload(const Value& v) {
  if (!v.is_object() || v.as_object().size() != 1) return nullptr;
  const Member& m = v.as_object().front();
  const std::string_view type = key_name(m.key);
  const bool tensor = type.find("Parameter") != std::string_view::npos ||
                      (type.starts_with("torch.") && type.find("Tensor", 6) != std::string_view::npos);
  return tensor && m.value.is_object() ? &m.value.as_object() : nullptr;
}

std::vector<uint32_t> complete_calls(const TraceStore& trace, std::string_view function) {
  std::vector<uint32_t> out;
  for (uint32_t ci : trace.calls_of(function))
    if (trace.calls()[ci].status == CallStatus::Complete) out.push_back(ci);
  return out;
}

bool ConsistentOutputRelation::outputs_match(const Record& post, std::string_view attr, const Value& expected) {
  const std::vector<const Object*> tensors = returned_tensors(post);
  if (tensors.empty()) return false;
  for (const Object* t : tensors) {
    const Member* found = nullptr;
    for (const Member& m : *t)
      if (key_name(m.key) == attr) found = &m;
    if (found == nullptr || !(found->value == expected)) return false;
  }
  return true;
}

std::vector<Hypothesis> ConsistentOutputRelation::generate(const TraceStore& trace) const {
  std::vector<Hypothesis> out;
  for (std::string_view function : trace.functions()) {
    const std::vector<uint32_t> calls = complete_calls(trace, function);
    // Calls returning each (attr, value), counted once per call.
    std::map<std::string, std::unordered_map<Value, size_t, ValueHash>> seen;
    for (uint32_t ci : calls) {
      std::map<std::string_view, std::vector<const Value*>> in_call;
      for (const Object* t : returned_tensors(trace.record(trace.calls()[ci].post)))
        for (const Member& m : *t) {
          const std::string_view attr = key_name(m.key);
          if (is_tool_attribute(attr) || !is_constant_candidate(m.value)) continue;
          std::vector<const Value*>& values = in_call[attr];
          bool dup = false;
          for (const Value* v : values) dup = dup || *v == m.value;
          if (!dup) values.push_back(&m.value);
        }
      for (const auto& [attr, values] : in_call)
        for (const Value* v : values) ++seen[std::string(attr)][*v];
    }
    for (const auto& [attr, values] : seen) {
      // Deterministic order: by the value's JSON text.
      std::map<std::string, const Value*> ordered;
      for (const auto& [v, n] : values)
        if (n >= 2) ordered.emplace(to_json(v), &v);
      for (const auto& [text, v] : ordered) {
        Hypothesis h = make_hypothesis(function, attr, *v);
        collect(trace, calls, h);
        if (h.positives.size() >= 2) out.push_back(std::move(h));
      }
    }
  }
  return out;
}

void ConsistentOutputRelation::collect_examples(const TraceStore& trace, Hypothesis& h) const {
  collect(trace, complete_calls(trace, h.invariant.params[0].api_full_name), h);
}

CheckResult ConsistentOutputRelation::check(const TraceStore& trace, const Invariant& inv, const CheckOptions& options) const {
  const std::optional<Target> target = target_of(inv);
  if (!target) return {};
  return check_calls(trace, inv, target->function, options, [&](const Record&, const Record& post) {
    return std::optional<bool>(outputs_match(post, *target->attr, *target->value));
  });
}

std::unique_ptr<OnlineCheck> ConsistentOutputRelation::make_online_check(const Invariant& inv, const ApiSignatures*) const {
  const std::optional<Target> target = target_of(inv);
  if (!target) return std::make_unique<CallOnlineCheck>(std::string(), std::nullopt, nullptr);
  return std::make_unique<CallOnlineCheck>(
      std::string(target->function), pre_event_group(inv),
      [attr = *target->attr, expected = *target->value](const Record&, const Record& post) {
        return std::optional<bool>(outputs_match(post, attr, expected));
      });
}

std::string ConsistentOutputRelation::display_name(const Invariant& inv) const {
  const std::optional<Target> target = target_of(inv);
  if (!target) return {};
  return short_api_name(target->function) + "() returns tensors with " + *target->attr + " = " + display_value(*target->value);
}

}  // namespace traincheck
