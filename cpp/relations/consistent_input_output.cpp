// ConsistentInputOutputRelation
//
// Learns: for every call of API f (that satisfies the precondition), a property of input tensor i,
// optionally one element of it (shape[0]), equals a property of output tensor j, in the
// spirit of PyTea / NeuRI shape constraints; e.g. normal_'s output shape[0] equals its input's.
//
// Params: [InputOutputParam("input_tensors", index=i, type="torch.Tensor", additional_path=[attr(, k)],
//          api_name=f, is_input=true), APIParam(f), InputOutputParam("output_tensors", index=j, ...,
//          is_input=false)].
// Precondition group: "pre_event" = [f's pre-record] (enriched with context managers).
//
// Example invariant:
//   {"relation": "ConsistentInputOutputRelation", "params": [
//      {"param_type": "InputOutputParam", "name": "input_tensors", "index": 0, "type": "torch.Tensor",
//       "additional_path": ["shape", 0], "api_name": "torch.Tensor.normal_", "is_input": true},
//      {"param_type": "APIParam", "api_full_name": "torch.Tensor.normal_"},
//      {"param_type": "InputOutputParam", "name": "output_tensors", "index": 0, "type": "torch.Tensor",
//       "additional_path": ["shape", 0], "api_name": "torch.Tensor.normal_", "is_input": false}],
//    "precondition": {"pre_event": {"inverted": false, "preconditions": [{"clauses": "Unconditional"}]}}, ...}
//
// Input tensors are the tensor-typed arguments (positional in order, then keyword ones in recorded
// order); output tensors are ConsistentOutputRelation::returned_tensors. A call whose value at either
// path is missing (no such tensor, attribute or element) is neither an example nor checked, as the
// original skips index and key errors. Exception and incomplete calls are neither.
//
// Generation: per call, each hashable value at an input path (a list attribute gives one path per
// element) is matched against the output paths holding the same value; a bool matches only the same
// (attr, element), as in the original. A path pair found in two calls of one trace is a hypothesis.
// The match goes through a hash map from value to output paths: O(calls x paths) plus the matches,
// instead of all path pairs. Like the original, it learns coincidences too (a constant dtype's itemsize
// equal to an ndim); preconditions and other traces' examples thin them out.
//
// Differences from the original:
//   - every call is examined (no sample of 1000 per function); a pair needs two agreeing calls in one
//     trace; the tool's id attributes (_TRAINCHECK_*_ID) are left out (ids differ run to run);
//   - the offline check reports every violating call, not only the first; a violation's records are
//     [pre, post]; online: CallOnlineCheck (call_checks.cpp), same verdict at the post-record.
#include "relations/consistent_input_output.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "relations/call_checks.h"
#include "relations/consistent_output.h"
#include "relations/tensor_paths.h"

namespace traincheck {

namespace {


bool is_position_name(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

Hypothesis make_hypothesis(std::string_view function, const IoPath& in, const IoPath& out) {
  Hypothesis h;
  h.invariant.relation = "ConsistentInputOutputRelation";
  h.invariant.params = {tensor_path_param(in, function, true), Param::api(function), tensor_path_param(out, function, false)};
  h.group_names = {std::string(kPreEventGroup)};
  h.invariant.text_description = SharedText() + h.invariant.params[1].api_full_name + ": " +
                                 describe_tensor_path("input", in) + " equals " + describe_tensor_path("output", out);
  return h;
}

void collect(const TraceStore& trace, const std::vector<uint32_t>& calls, const IoPath& in, const IoPath& out, Hypothesis& h) {
  for (uint32_t ci : calls) {
    const CallEvent& call = trace.calls()[ci];
    const std::optional<bool> agrees =
        ConsistentInputOutputRelation::call_agrees(trace.record(call.pre), trace.record(call.post), in, out);
    if (agrees) (*agrees ? h.positives : h.negatives).push_back(Example{&trace, {{call.pre}}});
  }
}

}  // namespace

std::vector<const Object*> ConsistentInputOutputRelation::input_tensors(const Record& pre) {
  std::vector<const Object*> out;
  if (const Value* args = pre.get(keys().args); args != nullptr && args->is_object()) {
    std::vector<std::pair<int64_t, const Value*>> positional;
    for (const Member& m : args->as_object())
      if (is_position_name(key_name(m.key))) positional.emplace_back(std::stoll(std::string(key_name(m.key))), &m.value);
    std::sort(positional.begin(), positional.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [i, v] : positional)
      if (const Object* t = ConsistentOutputRelation::tensor_payload(*v)) out.push_back(t);
  }
  if (const Value* kwargs = pre.get(keys().kwargs); kwargs != nullptr && kwargs->is_object())
    for (const Member& m : kwargs->as_object())
      if (const Object* t = ConsistentOutputRelation::tensor_payload(m.value)) out.push_back(t);
  return out;
}

const Value* ConsistentInputOutputRelation::value_at(const std::vector<const Object*>& tensors, const IoPath& path) {
  return tensor_value_at(tensors, path);
}

std::optional<bool> ConsistentInputOutputRelation::call_agrees(const Record& pre, const Record& post, const IoPath& in,
                                                               const IoPath& out) {
  const Value* a = value_at(input_tensors(pre), in);
  const Value* b = value_at(ConsistentOutputRelation::returned_tensors(post), out);
  if (a == nullptr || b == nullptr) return std::nullopt;
  return *a == *b;
}

std::optional<std::pair<IoPath, IoPath>> ConsistentInputOutputRelation::paths_of(const Invariant& inv) {
  if (inv.params.size() < 3 || inv.params[1].type != ParamType::Api) return std::nullopt;
  std::optional<IoPath> in = tensor_path_of(inv.params[0]);
  std::optional<IoPath> out = tensor_path_of(inv.params[2]);
  if (!in || !out) return std::nullopt;
  return std::pair{std::move(*in), std::move(*out)};
}

std::vector<Hypothesis> ConsistentInputOutputRelation::generate(const TraceStore& trace) const {
  std::vector<Hypothesis> out;
  for (std::string_view function : trace.functions()) {
    const std::vector<uint32_t> calls = complete_calls(trace, function);
    struct Found {
      IoPath in, out;
      size_t calls = 0;
    };
    std::map<std::string, Found> pairs;  // keyed by the two params' JSON: deterministic order
    for (uint32_t ci : calls) {
      const CallEvent& call = trace.calls()[ci];
      const std::vector<const Object*> ins = input_tensors(trace.record(call.pre));
      if (ins.empty()) continue;
      const std::vector<const Object*> outs = ConsistentOutputRelation::returned_tensors(trace.record(call.post));
      if (outs.empty()) continue;
      std::unordered_map<Value, std::vector<IoPath>, ValueHash> by_value;
      for_each_tensor_value(ins, [&](IoPath p, const Value& v) { by_value[v].push_back(std::move(p)); });
      for_each_tensor_value(outs, [&](const IoPath& q, const Value& v) {
        auto it = by_value.find(v);
        if (it == by_value.end()) return;
        for (const IoPath& p : it->second) {
          if (v.is_bool() && (p.attr != q.attr || p.element != q.element)) continue;
          const std::string key = tensor_path_param(p, function, true).to_json() + tensor_path_param(q, function, false).to_json();
          Found& f = pairs[key];
          if (f.calls == 0) f.in = p, f.out = q;
          ++f.calls;  // paths are unique within a call, so this counts calls
        }
      });
    }
    for (const auto& [key, f] : pairs) {
      if (f.calls < 2) continue;
      Hypothesis h = make_hypothesis(function, f.in, f.out);
      collect(trace, calls, f.in, f.out, h);
      out.push_back(std::move(h));
    }
  }
  return out;
}

void ConsistentInputOutputRelation::collect_examples(const TraceStore& trace, Hypothesis& h) const {
  const std::optional<std::pair<IoPath, IoPath>> paths = paths_of(h.invariant);
  if (!paths) return;
  collect(trace, complete_calls(trace, h.invariant.params[1].api_full_name), paths->first, paths->second, h);
}

CheckResult ConsistentInputOutputRelation::check(const TraceStore& trace, const Invariant& inv, const CheckOptions& options) const {
  const std::optional<std::pair<IoPath, IoPath>> paths = paths_of(inv);
  if (!paths) return {};
  return check_calls(trace, inv, inv.params[1].api_full_name, options, [&](const Record& pre, const Record& post) {
    return call_agrees(pre, post, paths->first, paths->second);
  });
}

std::unique_ptr<OnlineCheck> ConsistentInputOutputRelation::make_online_check(const Invariant& inv, const ApiSignatures*) const {
  const std::optional<std::pair<IoPath, IoPath>> paths = paths_of(inv);
  if (!paths) return std::make_unique<CallOnlineCheck>(std::string(), std::nullopt, nullptr);
  return std::make_unique<CallOnlineCheck>(inv.params[1].api_full_name, pre_event_group(inv),
                                           [in = paths->first, out = paths->second](const Record& pre, const Record& post) {
                                             return call_agrees(pre, post, in, out);
                                           });
}

std::string ConsistentInputOutputRelation::display_name(const Invariant& inv) const {
  const std::optional<std::pair<IoPath, IoPath>> paths = paths_of(inv);
  if (!paths) return {};
  return short_api_name(inv.params[1].api_full_name) + "(): " + describe_tensor_path("input", paths->first) + " == " +
         describe_tensor_path("output", paths->second);
}

}  // namespace traincheck
