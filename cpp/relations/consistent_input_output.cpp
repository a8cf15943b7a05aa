// ConsistentInputOutputRelation
//
// Learns: for every call of API f (that satisfies the precondition), a property of input tensor i,
// optionally one element of it (shape[0]), equals a property of output tensor j (compat §8.4), in the
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

namespace traincheck {

namespace {

constexpr std::string_view kGroup = "pre_event";
constexpr std::string_view kTensorType = "torch.Tensor";

bool is_position_name(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool usable(const Value& v) { return v.is_hashable() && !v.is_nan(); }

// Every usable (path, value) of `tensors`, list attributes expanded into their elements.
template <typename F>
void for_each_path(const std::vector<const Object*>& tensors, F&& f) {
  for (size_t t = 0; t < tensors.size(); ++t)
    for (const Member& m : *tensors[t]) {
      const std::string_view attr = key_name(m.key);
      if (ConsistentOutputRelation::is_tool_attribute(attr)) continue;
      if (usable(m.value)) {
        f(IoPath{static_cast<int64_t>(t), std::string(attr), -1}, m.value);
      } else if (m.value.is_array()) {
        const Array& items = m.value.as_array();
        for (size_t k = 0; k < items.size(); ++k)
          if (usable(items[k])) f(IoPath{static_cast<int64_t>(t), std::string(attr), static_cast<int64_t>(k)}, items[k]);
      }
    }
}

Param io_param(const IoPath& p, std::string_view function, bool is_input) {
  Param q;
  q.type = ParamType::InputOutput;
  q.name = is_input ? "input_tensors" : "output_tensors";
  q.index = Value::integer(p.tensor);
  q.io_type = std::string(kTensorType);
  Array path{Value::string(p.attr)};
  if (p.element >= 0) path.push_back(Value::integer(p.element));
  q.additional_path = Value::array(std::move(path));
  q.api_name = std::string(function);
  q.is_input = is_input;
  return q;
}

std::optional<IoPath> path_of(const Param& p) {
  if (p.type != ParamType::InputOutput || !p.index.is_int() || !p.additional_path.is_array()) return std::nullopt;
  const Array& a = p.additional_path.as_array();
  if (a.empty() || a.size() > 2 || !a[0].is_string() || (a.size() == 2 && !a[1].is_int())) return std::nullopt;
  return IoPath{p.index.as_int(), a[0].as_string(), a.size() == 2 ? a[1].as_int() : -1};
}

std::string describe_path(const char* side, const IoPath& p) {
  return std::string(side) + " " + std::to_string(p.tensor) + "." + p.attr +
         (p.element >= 0 ? "[" + std::to_string(p.element) + "]" : std::string());
}

Hypothesis make_hypothesis(std::string_view function, const IoPath& in, const IoPath& out) {
  Hypothesis h;
  h.invariant.relation = "ConsistentInputOutputRelation";
  h.invariant.params = {io_param(in, function, true), Param::api(std::string(function)), io_param(out, function, false)};
  h.group_names = {std::string(kGroup)};
  h.invariant.text_description =
      std::string(function) + ": " + describe_path("input", in) + " equals " + describe_path("output", out);
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
  if (path.tensor < 0 || static_cast<size_t>(path.tensor) >= tensors.size()) return nullptr;
  for (const Member& m : *tensors[path.tensor]) {
    if (key_name(m.key) != path.attr) continue;
    if (path.element < 0) return &m.value;
    if (!m.value.is_array() || static_cast<size_t>(path.element) >= m.value.as_array().size()) return nullptr;
    return &m.value.as_array()[path.element];
  }
  return nullptr;
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
  std::optional<IoPath> in = path_of(inv.params[0]);
  std::optional<IoPath> out = path_of(inv.params[2]);
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
      for_each_path(ins, [&](IoPath p, const Value& v) { by_value[v].push_back(std::move(p)); });
      for_each_path(outs, [&](const IoPath& q, const Value& v) {
        auto it = by_value.find(v);
        if (it == by_value.end()) return;
        for (const IoPath& p : it->second) {
          if (v.is_bool() && (p.attr != q.attr || p.element != q.element)) continue;
          const std::string key = io_param(p, function, true).to_json() + io_param(q, function, false).to_json();
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
  return short_api_name(inv.params[1].api_full_name) + "(): " + describe_path("input", paths->first) + " == " +
         describe_path("output", paths->second);
}

}  // namespace traincheck
