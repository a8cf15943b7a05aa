// APIContainRelation
//
// Learns: every call of API P (that satisfies the precondition) contains, while it runs, either a call of
// API C (optionally with fixed argument values) or a change of some `var_type.attr` from pre_value to
// post_value. "Contains" is any nesting depth on the same thread; var changes count when
// they happen in P's process within [P.pre, P.post].
//
// Params: [APIParam(P), APIParam(C, arguments?) | VarTypeParam(type, attr, pre_value, post_value)
//          | VarNameParam(type, name, attr, pre_value?, post_value?)].
// Precondition group: "parent_func_call_pre" = [P's pre-record] (enriched with context managers).
//
// Example invariant:
//   {"relation": "APIContainRelation", "params": [
//      {"param_type": "APIParam", "api_full_name": "torch.optim.optimizer.Optimizer.zero_grad"},
//      {"param_type": "VarTypeParam", "var_type": "torch.nn.Parameter", "attr_name": "grad",
//       "pre_value": "non_zero", "post_value": null}],
//    "precondition": {"parent_func_call_pre": {"inverted": true, "preconditions": [...]}}, ...}
//
// Differences from the original:
//   - every parent call is examined (no 1000-call cap, no random pruning of calls): the store answers
//     "contained events" from an index, so sampling buys nothing and made results depend on chance;
//   - hypotheses are not filtered by a first precondition pass inside generation
//     (docs/differences.md §Inference): preconditions are learned once, by the engine, over the examples of
//     all traces;
//   - the dynamic "var_events" analysis is not implemented (in the original it never activates because
//     of the short type name in proxy_obj_names); files with that group still load;
//   - argument constraints keep only primitive argument values (scalars, lists of scalars) and the mode
//     of module arguments, `self` included, as {"torch.nn.modules.module.Module": {"training": b}}
//     whatever the module's class (module_mode): "Sequential.forward calls Linear.forward on a layer in
//     training mode" in training steps catches a layer left in eval mode where no dropout or batch norm
//     shows it. Other object arguments (tensors) carry ids that differ run to run;
//   - argument constraints per stage, as the original's stage-by-stage inference gives them: an API
//     child's arguments are intersected over its calls within one stage of the parent calls (one
//     hypothesis per stage), then over the traces (the original keeps only equal argument sets, so a
//     seed or a path that differs run to run loses it the invariant), and the stages whose
//     constraints agree are combined into one hypothesis (combine); a distinct argument set stays its
//     own hypothesis restricted to its stages: Dropout.forward calls dropout(training=True) in training
//     and dropout(training=False) in testing, two invariants, so a model left in eval mode is flagged
//     at its first training step. When stages are combined, a trace that saw the child in fewer of
//     them has its calls in the others collected too, so each hypothesis is judged on every stage it
//     claims, in every trace;
//   - a parent call that changed the var child's attribute to other values (a "sibling" hypothesis'
//     change) is a negative example: the check judges it and, lacking this change, flags it, so the
//     original's leaving it out gave invariants that the very run they came from violates;
//   - the offline check reports every violating parent call, not only the first
//     (docs/differences.md §Checking);
//   - per-variable children (VarNameParam), which the original can load but never infers: "every
//     Adam.step changes model.encoder.0.weight.data". The type-level child is satisfied by any one
//     parameter changing, so an optimizer that updates the head but no longer the encoder (detached
//     features, params replaced after the optimizer was built) passes it. A value is constrained only
//     when every change agreed on it (zero_grad sets grad to None); the digests of data and grad differ
//     at every change, so their sign says nothing and they are left unconstrained (any change). The
//     invariant applies only where the variable exists: a parent call in a process that had not
//     recorded it by the call's end (another program, another model) gives no example and is never
//     checked against it.
//
// Checking (api_contain_online.cpp): one check, fed records as they are written (online) or the stored
// trace in order (offline, relations/replay_check.h: the parent's and an API child's calls, and a var
// child's attribute changes), with state bounded by the open calls and the tracked variables instead of
// the original's ever-growing maps. `contains` and JudgedCalls serve inference's examples.
#include "relations/api_contain.h"
#include "relations/api_contain_var_values.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "invariant/precondition.h"
#include "relations/module_mode.h"
#include "relations/registry.h"
#include "relations/replay_check.h"

namespace traincheck {

namespace {

constexpr double kMergeLikelihoodRatio = 1.3;

bool is_primitive(const Value& v) {
  if (v.is_hashable()) return !v.is_nan();
  if (v.is_array()) return std::all_of(v.as_array().begin(), v.as_array().end(), [](const Value& x) { return x.is_hashable(); });
  return false;
}

bool is_position_name(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Bound arguments of a call whose recorded payload ({type: payload}) is primitive, and module arguments
// as their mode (module_mode), `self` included: Linear.forward's own mode is the one that matters. Any
// other `self` is left out. A positional argument that no recorded signature names is left out: the
// original never writes index names ("0"), and cannot match them when it checks our invariants.
Object primitive_args(const TraceStore& trace, const Record& pre) {
  Object out;
  const bool self_first = recorded_self(pre) != nullptr;  // bind() puts it first
  Object bound = trace.signatures().bind(pre, false, false);
  for (size_t i = 0; i < bound.size(); ++i) {
    Member& m = bound[i];
    if (is_position_name(key_name(m.key))) continue;
    if (!m.value.is_object() || m.value.as_object().size() != 1) continue;
    if (std::optional<Value> mode = module_mode(m.value)) {
      m.value = std::move(*mode);
    } else if ((self_first && i == 0) || !is_primitive(m.value.as_object().front().value)) {
      continue;
    }
    out.push_back(std::move(m));
  }
  return out;
}

void intersect_args(Object& acc, const Object& next) {
  std::erase_if(acc, [&](const Member& m) {
    return std::none_of(next.begin(), next.end(), [&](const Member& n) { return n.key == m.key && n.value == m.value; });
  });
}

// `absent_unknown`: the call's API has no recorded signature, so an argument passed by position has no
// name, and a constrained argument the call does not name is unknown, not different: it is not held
// against the call (a missing api_signatures.json must not make every constrained child a violation).
bool args_match(const Value& arguments, const Object& bound, bool absent_unknown) {
  const Value* args = arguments.find("args");
  if (args == nullptr || !args->is_object()) return true;
  for (const Member& want : args->as_object()) {
    bool named = false;
    const bool found = std::any_of(bound.begin(), bound.end(), [&](const Member& m) {
      if (m.key != want.key) return false;
      named = true;
      std::optional<Value> mode = module_mode(m.value);
      return (mode ? *mode : m.value) == want.value;
    });
    if (!found && (named || !absent_unknown)) return false;
  }
  return true;
}

double likelihood(size_t positives, size_t total) {
  const double pos = static_cast<double>(positives), neg = static_cast<double>(total - positives);
  return 1.0 / (1.0 + std::exp(-0.1 * (pos - neg)));
}

void describe(Hypothesis& h) {
  const Param& parent = h.invariant.params[0];
  const Param& child = h.invariant.params[1];
  SharedText& s = h.invariant.text_description;
  s = SharedText() + parent.api_full_name + " contains ";
  if (child.type == ParamType::Api) {
    s += child.api_full_name;
    if (child.arguments && child.arguments->is_object())
      if (const Value* a = child.arguments->find("args")) s += "(" + to_json(*a) + ")";
    return;
  }
  auto v = [](const std::optional<Value>& x) { return x ? to_json(*x) : std::string("*"); };
  s += "a change of ";
  s += child.var_type;
  if (child.type == ParamType::VarName) s = s + "[" + child.var_name + "]";
  s = s + "." + child.attr_name + " from " + v(child.pre_value) + " to " + v(child.post_value);
}

// Argument constraints as text in one canonical order (by name): equal sets give equal text whatever
// order the calls bound them in. Params keep the signature's order, as the original writes them.
std::string canonical_args(Object args) {
  std::sort(args.begin(), args.end(), [](const Member& a, const Member& b) { return key_name(a.key) < key_name(b.key); });
  return to_json(Value::object(std::move(args)));
}

// A child param's identity across traces: the param without arguments, plus its canonical arguments.
std::string canonical_child(const Param& child) {
  Param bare = child;
  bare.arguments.reset();
  const Value* args = child.arguments && child.arguments->is_object() ? child.arguments->find("args") : nullptr;
  return bare.compact_key() + (args != nullptr && args->is_object() ? canonical_args(args->as_object()) : std::string());
}

Hypothesis make_hypothesis(const TraceStore& trace, std::string_view parent, Param child) {
  Hypothesis h;
  h.invariant.relation = "APIContainRelation";
  h.invariant.params = {Param::api(parent), std::move(child)};
  h.group_names = {std::string(ApiContainRelation::kGroup)};
  // Merged across traces by parent and child; an API child's argument values are intersected (merge),
  // so its key leaves them out and the caller adds the stage.
  Param key_child = h.invariant.params[1];
  key_child.arguments.reset();
  h.merge_key = std::to_string(h.invariant.params[0].api_full_name.id()) + "|" + key_child.compact_key();
  describe(h);
  return h;
}

Example example_of(const TraceStore& trace, const CallEvent& call) { return Example{&trace, {{call.pre}}}; }

bool in_stages(const std::vector<std::string>& stages, std::string_view s) {
  return stages.empty() || std::find(stages.begin(), stages.end(), s) != stages.end();
}

// Fills examples and valid stages of `h` from the positions (into `calls`, sorted) that contain its child.
void fill_examples(const TraceStore& trace, const std::vector<uint32_t>& calls, const std::vector<uint32_t>& positive,
                   Hypothesis& h) {
  std::set<std::string> stages;
  for (uint32_t p : positive) stages.insert(std::string(trace.record(trace.calls()[calls[p]].pre).stage));
  h.valid_stages.assign(stages.begin(), stages.end());
  size_t next = 0;
  for (uint32_t p = 0; p < calls.size(); ++p) {
    const CallEvent& call = trace.calls()[calls[p]];
    if (next < positive.size() && positive[next] == p) {
      h.positives.push_back(example_of(trace, call));
      ++next;
    } else if (stages.count(std::string(trace.record(call.pre).stage))) {
      h.negatives.push_back(example_of(trace, call));
    }
  }
}

Param api_child_param(std::string_view name, Object args) {
  Param p = Param::api(std::string(name));
  if (!args.empty())
    p.arguments = make_object({{"args", Value::object(std::move(args))}, {"func_name", Value::string(std::string(name))}});
  return p;
}

// The argument constraints of an API child param (empty if none).
Object child_args(const Param& child) {
  const Value* args = child.arguments && child.arguments->is_object() ? child.arguments->find("args") : nullptr;
  return args != nullptr && args->is_object() ? args->as_object() : Object{};
}

// A child API seen in the parent calls of one stage: the positions (into the parent's calls) of the
// calls containing it, and the argument values all its calls in that stage share.
struct ApiChild {
  std::vector<uint32_t> positions;
  Object common_args;
  bool seen = false;
};

// One named variable's changes of one attribute inside the parent calls: the positions of the calls
// that changed it, and each side's distinct values while they are few (a constraint needs one).
struct NamedVarChanges {
  std::vector<uint32_t> positions;
  std::vector<Value> pres, posts;  // distinct values, at most two kept
};

void note_distinct(std::vector<Value>& seen, const Value& v) {
  if (seen.size() < 2 && std::find(seen.begin(), seen.end(), v) == seen.end()) seen.push_back(v);
}

Param named_var_param(std::string_view var_type, std::string_view var_name, std::string_view attr,
                      const NamedVarChanges& changes) {
  Param p = Param::var_type_param(var_type, attr);
  p.type = ParamType::VarName;
  p.var_name = Name(var_name);
  if (changes.pres.size() == 1) p.pre_value = changes.pres.front();
  if (changes.posts.size() == 1) p.post_value = changes.posts.front();
  return p;
}

// The parent calls of `trace` a child judges: all, except that a VarNameParam judges a call only in a
// process that had recorded its variable's attribute by the time the call ended. The invariant says
// nothing about processes (or programs) without that variable, nor about calls before it existed.
class JudgedCalls {
 public:
  JudgedCalls(const TraceStore& trace, const Param& child) : trace_(trace) {
    if (child.type != ParamType::VarName) return;
    named_ = true;
    for (const VarInstance& v : trace.var_instances()) {
      if (v.var_name != child.var_name || v.var_type != child.var_type) continue;
      const AttrHistory* attr = v.attr(child.attr_name);
      if (attr == nullptr || attr->states.empty()) continue;
      auto [it, inserted] = first_recorded_.try_emplace(v.process_id, attr->states.front().start);
      if (!inserted) it->second = std::min(it->second, attr->states.front().start);
    }
  }
  bool judged(const CallEvent& call) const {
    if (!named_) return true;
    auto it = first_recorded_.find(trace_.process_of(call));
    return it != first_recorded_.end() && it->second <= call.end;
  }

 private:
  const TraceStore& trace_;
  bool named_ = false;
  std::map<int64_t, int64_t> first_recorded_;  // pid -> time of the variable's first state
};

bool is_parent_candidate(const TraceStore& trace, std::string_view fn) {
  if (is_analysis_skipped_function(fn)) return false;
  // The original skips functions whose signature is empty; without recorded signatures, keep all.
  const std::vector<SignatureParam>* sig = trace.signatures().find(fn);
  return sig == nullptr || !sig->empty();
}

}  // namespace

bool ApiContainRelation::api_call_matches(const Param& child, const Record& pre, const ApiSignatures& signatures) {
  if (child.type != ParamType::Api || pre.function != child.api_full_name) return false;
  const bool with_args = child.arguments && child.arguments->is_object();
  // `self` is bound too: the original writes it into method children's argument constraints.
  return !with_args || args_match(*child.arguments, signatures.bind(pre, false, false), signatures.find(pre.function) == nullptr);
}

bool ApiContainRelation::api_outcome_matches(const Param& child, bool raised) {
  const bool want_exception = child.exception && !child.exception->is_null();
  return raised == want_exception;
}

bool ApiContainRelation::var_change_matches(const Param& child, std::string_view var_type, std::string_view var_name,
                                            std::string_view attr, const Value& before, const Value& after) {
  if (child.type != ParamType::VarType && child.type != ParamType::VarName) return false;
  if (var_type != child.var_type || attr != child.attr_name) return false;
  if (child.type == ParamType::VarName && var_name != child.var_name) return false;
  if (child.pre_value && !value_matches(*child.pre_value, before)) return false;
  if (child.post_value && !value_matches(*child.post_value, after)) return false;
  return true;
}

bool ApiContainRelation::contains(const TraceStore& trace, const CallEvent& call, const Param& child) {
  if (child.type == ParamType::Api) {
    for (uint32_t ci : trace.contained_calls(call)) {
      const CallEvent& inner = trace.calls()[ci];
      if (trace.function_of(inner) != child.api_full_name) continue;  // cheap test first
      if (!api_outcome_matches(child, inner.status == CallStatus::Exception)) continue;
      if (api_call_matches(child, trace.record(inner.pre), trace.signatures())) return true;
    }
    return false;
  }
  for (const VarChange& change : trace.contained_var_changes(call)) {
    const VarInstance& var = trace.var(change);
    const AttrHistory& attr = trace.attr(change);
    if (var_change_matches(child, var.var_type, var.var_name, attr.name, attr.states[change.new_state - 1].value,
                           attr.states[change.new_state].value))
      return true;
  }
  return false;
}

namespace {

// What the (complete) calls of one parent contain, gathered in one pass over them. Positions index the
// parent's calls.
struct ParentChildren {
  // Per child function and stage of the parent call: the parent calls containing it, and the argument
  // values all its calls there share.
  std::map<std::string_view, std::map<std::string_view, ApiChild>> api;
  // Per (var type, attribute): its changes, a hypothesis per distinct (pre, post) value pair.
  std::map<std::pair<std::string_view, std::string>, VarValueChanges> var_values;
  // Per (var type, var name, attribute): a named variable's changes.
  std::map<std::tuple<std::string_view, std::string_view, std::string_view>, NamedVarChanges> named;
};

void note_api_children(const TraceStore& trace, const CallEvent& call, uint32_t pos, ParentChildren& out) {
  const std::string_view stage = trace.record(call.pre).stage;
  for (uint32_t ci : trace.contained_calls(call)) {
    const CallEvent& inner = trace.calls()[ci];
    if (inner.status == CallStatus::Exception) continue;
    ApiChild& child = out.api[trace.function_of(inner)][stage];
    if (child.positions.empty() || child.positions.back() != pos) child.positions.push_back(pos);
    Object args = primitive_args(trace, trace.record(inner.pre));
    if (!child.seen) {
      child.common_args = std::move(args);
      child.seen = true;
    } else if (!child.common_args.empty()) {
      intersect_args(child.common_args, args);
    }
  }
}

void note_var_changes(const TraceStore& trace, const CallEvent& call, uint32_t pos, ParentChildren& out) {
  for (const VarChange& change : trace.contained_var_changes(call)) {
    const AttrHistory& attr = trace.attr(change);
    const Value& pre = attr.states[change.new_state - 1].value;
    const Value& post = attr.states[change.new_state].value;
    out.var_values[{trace.var(change).var_type, attr.name}].add(trace, change, pos);
    const VarInstance& var = trace.var(change);
    if (var.var_name.empty()) continue;
    NamedVarChanges& named = out.named[{var.var_type, var.var_name, attr.name}];
    if (named.positions.empty() || named.positions.back() != pos) named.positions.push_back(pos);
    note_distinct(named.pres, pre);
    note_distinct(named.posts, post);
  }
}

// One hypothesis per child and stage, as the original infers stage by stage: merged across traces
// stage by stage, then combined over the stages whose arguments agree (combine).
void add_api_hypotheses(const TraceStore& trace, std::string_view parent, const std::vector<uint32_t>& calls,
                        ParentChildren& children, std::vector<Hypothesis>& out) {
  for (auto& [name, by_stage] : children.api)
    for (auto& [stage, child] : by_stage) {
      Hypothesis h = make_hypothesis(trace, parent, api_child_param(name, std::move(child.common_args)));
      h.merge_key += "|";
      h.merge_key += stage;
      fill_examples(trace, calls, child.positions, h);
      out.push_back(std::move(h));
    }
}

void add_named_var_hypotheses(const TraceStore& trace, std::string_view parent, const std::vector<uint32_t>& calls,
                              const ParentChildren& children, std::vector<Hypothesis>& out) {
  for (const auto& [target, changes] : children.named) {
    const auto& [var_type, var_name, attr] = target;
    Hypothesis h = make_hypothesis(trace, parent, named_var_param(var_type, var_name, attr, changes));
    // Calls where the variable did not exist are no examples (JudgedCalls).
    std::vector<uint32_t> judged_calls, judged_positive;
    const JudgedCalls judged(trace, h.invariant.params[1]);
    size_t next = 0;
    for (uint32_t p = 0; p < calls.size(); ++p) {
      const bool positive = next < changes.positions.size() && changes.positions[next] == p;
      if (positive) ++next;
      if (!judged.judged(trace.calls()[calls[p]])) continue;
      if (positive) judged_positive.push_back(static_cast<uint32_t>(judged_calls.size()));
      judged_calls.push_back(calls[p]);
    }
    fill_examples(trace, judged_calls, judged_positive, h);
    out.push_back(std::move(h));
  }
}

void add_var_value_hypotheses(const TraceStore& trace, std::string_view parent, const std::vector<uint32_t>& calls,
                              ParentChildren& children, std::vector<Hypothesis>& out) {
  for (auto& [target, changes] : children.var_values) {
    const auto& [var_type, attr] = target;
    auto make_var_param = [&](Value pre, Value post) {
      Param p = Param::var_type_param(std::string(var_type), attr);
      p.pre_value = std::move(pre);
      p.post_value = std::move(post);
      return p;
    };
    const std::vector<VarValueChanges::Distinct> values = changes.distinct(trace);
    // Merge the value hypotheses when one generalised hypothesis explains the calls much better.
    std::set<uint32_t> all;
    double mean = 0;
    for (const VarValueChanges::Distinct& vh : values) {
      all.insert(vh.positions.begin(), vh.positions.end());
      mean += likelihood(vh.positions.size(), calls.size());
    }
    mean /= static_cast<double>(values.size());
    if (values.size() > 1 && likelihood(all.size(), calls.size()) / mean >= kMergeLikelihoodRatio) {
      // One value when all are equal (the first, in key order), else their generalisation, which does
      // not depend on order or repeats.
      auto merged = [&](auto side) {
        const Value& first = *side(values.front());
        const bool one = std::all_of(values.begin() + 1, values.end(), [&](const auto& vh) { return *side(vh) == first; });
        if (one) return first;
        std::vector<Value> all_values;
        all_values.reserve(values.size());
        for (const VarValueChanges::Distinct& vh : values) all_values.push_back(*side(vh));
        return generalize_values(all_values);
      };
      Value pre = merged([](const VarValueChanges::Distinct& vh) { return vh.pre; });
      Value post = merged([](const VarValueChanges::Distinct& vh) { return vh.post; });
      Hypothesis h = make_hypothesis(trace, parent, make_var_param(std::move(pre), std::move(post)));
      fill_examples(trace, calls, std::vector<uint32_t>(all.begin(), all.end()), h);
      out.push_back(std::move(h));
      continue;
    }
    for (const VarValueChanges::Distinct& vh : values) {
      // A call that made a sibling change (other values) is a negative: the check judges it too.
      Hypothesis h = make_hypothesis(trace, parent, make_var_param(*vh.pre, *vh.post));
      fill_examples(trace, calls, std::vector<uint32_t>(vh.positions.begin(), vh.positions.end()), h);
      out.push_back(std::move(h));
    }
  }
}

}  // namespace

bool ApiContainRelation::judges_parent(const Record& pre) {
  const Value* compiled = pre.get(keys().compiled);
  return compiled == nullptr || !compiled->is_bool() || !compiled->as_bool();
}

std::vector<Hypothesis> ApiContainRelation::generate(const TraceStore& trace) const {
  std::vector<Hypothesis> out;
  for (std::string_view parent : trace.functions()) {
    if (!is_parent_candidate(trace, parent)) continue;
    std::vector<uint32_t> calls;
    for (uint32_t ci : trace.calls_of(parent))
      if (trace.calls()[ci].status != CallStatus::Incomplete && judges_parent(trace.record(trace.calls()[ci].pre)))
        calls.push_back(ci);
    if (calls.empty()) continue;
    ParentChildren children;
    for (uint32_t pos = 0; pos < calls.size(); ++pos) {
      const CallEvent& call = trace.calls()[calls[pos]];
      note_api_children(trace, call, pos, children);
      note_var_changes(trace, call, pos, children);
    }
    add_api_hypotheses(trace, parent, calls, children, out);
    add_named_var_hypotheses(trace, parent, calls, children, out);
    add_var_value_hypotheses(trace, parent, calls, children, out);
  }
  return out;
}

namespace {

// Adds an example per parent call of `trace` in `stages` (every stage when empty).
void collect_in_stages(const TraceStore& trace, const std::vector<std::string>& stages, Hypothesis& h) {
  const Param& parent = h.invariant.params[0];
  const Param& child = h.invariant.params[1];
  const JudgedCalls judged(trace, child);
  for (uint32_t ci : trace.calls_of(parent.api_full_name)) {
    const CallEvent& call = trace.calls()[ci];
    if (call.status == CallStatus::Incomplete || !in_stages(stages, trace.record(call.pre).stage)) continue;
    if (!judged.judged(call) || !ApiContainRelation::judges_parent(trace.record(call.pre))) continue;
    (ApiContainRelation::contains(trace, call, child) ? h.positives : h.negatives).push_back(example_of(trace, call));
  }
}

// The stages of `b` that `a` lacks (none when either is unrestricted).
std::vector<std::string> stages_missing(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<std::string> out;
  if (a.empty() || b.empty()) return out;
  for (const std::string& s : b)
    if (std::find(a.begin(), a.end(), s) == a.end()) out.push_back(s);
  return out;
}

bool generated(const Hypothesis& h, const TraceStore* t) {
  return std::find(h.generated_by.begin(), h.generated_by.end(), t) != h.generated_by.end();
}

// Folds `other` (same params) into `into`: examples, stages, generating traces. Each generating trace
// has examples of every stage its hypothesis claims; one that generated only one side has not judged
// its calls in the other side's stages (where its child had other arguments, or was absent), so those
// are collected now. Engine merges and combine() both rely on this.
void fold(Hypothesis& into, Hypothesis&& other) {
  const std::vector<std::string> into_lacks = stages_missing(into.valid_stages, other.valid_stages);
  const std::vector<std::string> other_lacks = stages_missing(other.valid_stages, into.valid_stages);
  for (const TraceStore* t : into.generated_by)
    if (!into_lacks.empty() && !generated(other, t)) collect_in_stages(*t, into_lacks, into);
  for (const TraceStore* t : other.generated_by)
    if (!other_lacks.empty() && !generated(into, t)) collect_in_stages(*t, other_lacks, other);
  std::vector<const TraceStore*> traces = into.generated_by;
  for (const TraceStore* t : other.generated_by)
    if (!generated(into, t)) traces.push_back(t);
  // Relation::merge's default: examples concatenated, stages united.
  std::move(other.positives.begin(), other.positives.end(), std::back_inserter(into.positives));
  std::move(other.negatives.begin(), other.negatives.end(), std::back_inserter(into.negatives));
  for (std::string& s : other.valid_stages)
    if (std::find(into.valid_stages.begin(), into.valid_stages.end(), s) == into.valid_stages.end()) into.valid_stages.push_back(std::move(s));
  std::sort(into.valid_stages.begin(), into.valid_stages.end());
  into.generated_by = std::move(traces);
}

}  // namespace

void ApiContainRelation::collect_examples(const TraceStore& trace, Hypothesis& h) const {
  collect_in_stages(trace, h.valid_stages, h);
}

void ApiContainRelation::merge(Hypothesis& into, Hypothesis&& other) const {
  Param& a = into.invariant.params[1];
  if (a.type == ParamType::Api) {
    // One stage of one parent and child in two traces: only argument values both agree on remain.
    const bool constrained = a.arguments.has_value();
    Object common = child_args(a);
    intersect_args(common, child_args(other.invariant.params[1]));
    a = api_child_param(a.api_full_name, constrained && other.invariant.params[1].arguments ? std::move(common) : Object{});
  }
  fold(into, std::move(other));
  describe(into);
}

void ApiContainRelation::combine(std::vector<Hypothesis>& hypotheses) const {
  // Per-stage hypotheses of one parent and API child whose argument constraints agree (after the
  // traces' intersection) are one hypothesis over their stages, as the original merges equal
  // invariants of different stages; those that differ (dropout's `training`) stay apart.
  std::map<std::string, size_t> kept;  // parent | canonical child -> position in out
  std::vector<Hypothesis> out;
  for (Hypothesis& h : hypotheses) {
    if (h.invariant.params[1].type != ParamType::Api) {
      out.push_back(std::move(h));
      continue;
    }
    const std::string key = std::to_string(h.invariant.params[0].api_full_name.id()) + "|" + canonical_child(h.invariant.params[1]);
    auto [it, inserted] = kept.try_emplace(key, out.size());
    if (inserted) out.push_back(std::move(h));
    else fold(out[it->second], std::move(h));
  }
  hypotheses = std::move(out);
}

CheckResult ApiContainRelation::check(const TraceStore& trace, const Invariant& inv, const CheckOptions& options) const {
  ApiContainOnlineCheck check(inv, &trace.signatures());
  return replay_check(trace, inv, check, options);
}

std::unique_ptr<OnlineCheck> ApiContainRelation::make_online_check(const Invariant& inv,
                                                                       const ApiSignatures* signatures) const {
  return std::make_unique<ApiContainOnlineCheck>(inv, signatures);
}

// A var-change child is checked on the variables the parent's calls changed: the collector tracks their
// type inside the parent (instr_opts' var_types_to_track).
RecordNeeds ApiContainRelation::record_needs(const Invariant& inv) const {
  RecordNeeds needs;
  if (!inv.params.empty() && (inv.params.back().type == ParamType::VarType || inv.params.back().type == ParamType::VarName))
    needs.var_types_in_first_api.push_back(inv.params.back().var_type);
  return needs;
}

std::string ApiContainRelation::display_name(const Invariant& inv) const {
  if (inv.params.size() < 2) return {};
  const std::string parent = short_api_name(inv.params[0].api_full_name) + "()";
  const Param& child = inv.params[1];
  if (child.type == ParamType::Api) return parent + " always calls " + short_api_name(child.api_full_name) + "()";
  auto v = [](const std::optional<Value>& x) { return x ? display_value(*x) : std::string("anything"); };
  const std::string target = child.type == ParamType::VarName ? child.var_name.str() : short_type_name(child.var_type);
  return parent + " changes " + target + "." + child.attr_name.str() + ": " + v(child.pre_value) +
         " --> " + v(child.post_value);
}

}  // namespace traincheck
