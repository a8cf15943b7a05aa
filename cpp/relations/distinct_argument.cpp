// DistinctArgumentRelation
//
// Learns: within one training step, no two calls of API f (on any threads or processes, or one thread
// twice) receive the same positional arguments; e.g. the `normal_` initialisation of DDP ranks does
// not get identical seeds or shapes. "The same" is same_arguments() below.
//
// Params: [APIParam(f)]. Precondition group: "distinct_arg" = [pre-record of call 1, of call 2].
//
// Example invariant:
//   {"relation": "DistinctArgumentRelation", "params": [
//      {"param_type": "APIParam", "api_full_name": "torch._C.TensorBase.normal_"}],
//    "precondition": {"distinct_arg": {"inverted": false, "preconditions": [{"clauses": "Unconditional"}]}}, ...}
//
// Candidates: functions with `args` on their pre-records, not skipped for analysis, never more than 6
// records in a row on a thread. Calls without a step are judged together, as step -1.
// Examples: every pair of calls of one step; different arguments make a positive, the same a negative.
// A function without a positive is no hypothesis.
//
// What it costs: O(k²) argument comparisons for a step with k calls (as the original); each compares
// the two argument objects position by position and stops at the first difference.
//
// Checking: one implementation, DistinctArgumentOnlineCheck below, fed records as they are written
// (online) or the stored trace in order (offline, relations/replay_check.h). Each pre-record of the API
// with arguments is compared with the calls kept for its step, then kept. Online, a step's calls are
// dropped once the newest step seen is kStepsKept ahead of it (records of the ranks of a run, merged by
// time, drift apart by a step or two, not eight); offline every step is kept. Calls without a step (step
// -1, before training) are kept for the whole run. A violation's records are [the later call's
// pre-record, the earlier one's], in the order the later calls came.
//
// Differences from the original:
//   - the check verifies the precondition per pair, on the pair's two records, each with the context
//     managers live on its thread at its time (the original verifies it once, on the list of all of f's
//     pre-records);
//   - it reports every identical pair, not only the first; a violation's records are [the later call's
//     pre-record, the earlier one's];
//   - a tensor argument's identity is its data's address (_TRAINCHECK_data_ID as ours records it), never
//     a Python id: a freed temporary's id is reused by the next one (`.data` of different parameters
//     looked alike); the tool's other ids take no part. Tensors of two processes are never the same
//     argument: forked DataLoader workers allocate alike, and equal addresses in two address spaces
//     made a worker's `warn_if_has_hooks` look repeated, depending on which batches met in a step.
#include "relations/distinct_argument.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "relations/consistent_output.h"
#include "relations/function_pool.h"
#include "relations/replay_check.h"

namespace traincheck {

namespace {

constexpr std::string_view kGroup = "distinct_arg";
constexpr std::string_view kDataIdentity = "_TRAINCHECK_data_ID";
constexpr double kMinIntListOverlap = 0.1;

const Value* args_of(const Record& pre) { return pre.get(keys().args); }

bool is_int_list(const Value& v) {
  if (!v.is_array()) return false;
  return std::all_of(v.as_array().begin(), v.as_array().end(), [](const Value& x) { return x.is_int(); });
}

double int_list_overlap(const Value& a, const Value& b) {
  std::set<int64_t> x, y;
  for (const Value& v : a.as_array()) x.insert(v.as_int());
  for (const Value& v : b.as_array()) y.insert(v.as_int());
  size_t common = 0;
  for (int64_t v : x) common += y.count(v);
  const size_t all = x.size() + y.size() - common;
  return all == 0 ? 0.0 : static_cast<double>(common) / static_cast<double>(all);
}

bool same_value(const Value& a, const Value& b, bool same_process) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case ValueKind::Array: {
      if (is_int_list(a) && is_int_list(b)) return int_list_overlap(a, b) >= kMinIntListOverlap;
      const Array& x = a.as_array();
      const Array& y = b.as_array();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i)
        if (!same_value(x[i], y[i], same_process)) return false;
      return true;
    }
    case ValueKind::Object: return DistinctArgumentRelation::same_arguments(a, b, same_process);
    case ValueKind::Double: return std::fabs(a.as_double() - b.as_double()) < 1e-8;
    default: return a == b;
  }
}

// The calls of `function` with arguments, per step, in trace order.
std::map<int64_t, std::vector<uint32_t>> calls_by_step(const TraceStore& trace, std::string_view function) {
  std::map<int64_t, std::vector<uint32_t>> out;
  for (uint32_t ci : trace.calls_of(function)) {
    const Record& pre = trace.record(trace.calls()[ci].pre);
    if (args_of(pre) != nullptr) out[DistinctArgumentRelation::step_of(pre)].push_back(trace.calls()[ci].pre);
  }
  for (auto& [step, pres] : out) std::sort(pres.begin(), pres.end());
  return out;
}

// Calls f(earlier, later, same) for every pair of calls of one step.
template <typename F>
void for_each_pair(const TraceStore& trace, std::string_view function, F&& f) {
  for (const auto& [step, pres] : calls_by_step(trace, function))
    for (size_t j = 1; j < pres.size(); ++j)
      for (size_t i = 0; i < j; ++i) {
        const Record& a = trace.record(pres[i]);
        const Record& b = trace.record(pres[j]);
        const bool same = DistinctArgumentRelation::same_arguments(*args_of(a), *args_of(b), a.process_id == b.process_id);
        f(pres[i], pres[j], same);
      }
}

Hypothesis make_hypothesis(std::string_view function) {
  Hypothesis h;
  h.invariant.relation = "DistinctArgumentRelation";
  h.invariant.params = {Param::api(function)};
  h.group_names = {std::string(kGroup)};
  h.invariant.text_description =
      SharedText() + h.invariant.params[0].api_full_name + " receives different arguments in each call of a step";
  return h;
}

void collect(const TraceStore& trace, Hypothesis& h) {
  for_each_pair(trace, h.invariant.params[0].api_full_name, [&](uint32_t a, uint32_t b, bool same) {
    (same ? h.negatives : h.positives).push_back(Example{&trace, {{a, b}}});
  });
}

const std::string* function_of(const Invariant& inv) {
  if (inv.params.empty() || inv.params[0].type != ParamType::Api) return nullptr;
  return &inv.params[0].api_full_name.str();
}

}  // namespace

bool DistinctArgumentRelation::same_arguments(const Value& args1, const Value& args2, bool same_process) {
  if (!args1.is_object() || !args2.is_object()) return false;  // a missing or NaN list is never the same
  const Object& x = args1.as_object();
  const Object& y = args2.as_object();
  // Of the tool's own attributes only a tensor's identity takes part (_TRAINCHECK_data_ID: the address of
  // its data, which no other live tensor has unless it views the same data): without it, every two
  // tensors of one shape and dtype were "the same argument", so a correct initialisation of equally
  // shaped parameters (`p.data.normal_()` for each p) was flagged. Other ids (a grad's,
  // Python ids in the original's traces) take no part.
  auto compared = [](const Member& m) {
    const std::string_view name = key_name(m.key);
    return !is_tool_attribute(name) || name == kDataIdentity;
  };
  if (std::count_if(x.begin(), x.end(), compared) != std::count_if(y.begin(), y.end(), compared)) return false;
  for (const Member& m : x) {
    if (!compared(m)) continue;
    auto it = std::find_if(y.begin(), y.end(), [&](const Member& n) { return n.key == m.key; });
    if (it == y.end()) return false;
    // A data address names a tensor only in its own process: forked processes (DataLoader workers)
    // allocate alike, so tensors of two processes often sit at equal addresses.
    if (!same_process && key_name(m.key) == kDataIdentity) return false;
    if (!same_value(m.value, it->value, same_process)) return false;
  }
  return true;
}

std::vector<Hypothesis> DistinctArgumentRelation::generate(const TraceStore& trace) const {
  std::vector<Hypothesis> out;
  for (std::string_view function : functions_without_long_runs(trace, kMaxConsecutiveRecords)) {
    Hypothesis h = make_hypothesis(function);
    collect(trace, h);
    if (!h.positives.empty()) out.push_back(std::move(h));
  }
  return out;
}

void DistinctArgumentRelation::collect_examples(const TraceStore& trace, Hypothesis& h) const {
  if (function_of(h.invariant) != nullptr) collect(trace, h);
}

CheckResult DistinctArgumentRelation::check(const TraceStore& trace, const Invariant& inv, const CheckOptions& options) const {
  DistinctArgumentOnlineCheck check = make_check(inv, /*steps_kept=*/std::nullopt);
  return replay_check(trace, inv, check, options);
}

std::unique_ptr<OnlineCheck> DistinctArgumentRelation::make_online_check(const Invariant& inv, const ApiSignatures*) const {
  return std::make_unique<DistinctArgumentOnlineCheck>(make_check(inv, DistinctArgumentOnlineCheck::kStepsKept));
}

DistinctArgumentOnlineCheck DistinctArgumentRelation::make_check(const Invariant& inv, std::optional<int64_t> steps_kept) {
  const std::string* function = function_of(inv);
  std::optional<PreconditionGroup> precondition;
  if (const PreconditionGroup* g = inv.precondition_group(kGroup)) precondition = *g;
  return DistinctArgumentOnlineCheck(function ? *function : std::string(), std::move(precondition), steps_kept);
}

DistinctArgumentOnlineCheck::DistinctArgumentOnlineCheck(std::string function, std::optional<PreconditionGroup> precondition,
                                                         std::optional<int64_t> steps_kept)
    : function_(std::move(function)), name_(function_), precondition_(std::move(precondition)), steps_kept_(steps_kept) {}

OnlineInterest DistinctArgumentOnlineCheck::interest() const {
  OnlineInterest i;
  i.all_records = false;
  if (!function_.empty()) i.functions = {function_};
  return i;
}

size_t DistinctArgumentOnlineCheck::kept_calls() const {
  size_t n = 0;
  for (const auto& [step, calls] : calls_by_step_) n += calls.size();
  return n;
}

void DistinctArgumentOnlineCheck::on_record(const Record& r, std::vector<OnlineViolation>& violations) {
  if (function_.empty() || r.type != RecordType::FunctionPre || r.function != name_) return;
  const Value* args = r.get(keys().args);
  if (args == nullptr) return;
  const int64_t step = DistinctArgumentRelation::step_of(r);
  std::vector<HeldRecord>& earlier_calls = calls_by_step_[step];
  for (const HeldRecord& held : earlier_calls) {
    const Record& earlier = *held;
    if (precondition_ && !precondition_->holds_on(earlier, r)) continue;
    triggered_ = true;
    if (DistinctArgumentRelation::same_arguments(*earlier.get(keys().args), *args, earlier.process_id == r.process_id))
      violations.push_back(OnlineViolation{{r, earlier}});
  }
  earlier_calls.emplace_back(r, lasting_records_);
  if (step > newest_step_) {
    newest_step_ = step;
    if (!steps_kept_) return;
    // Keep -1 (calls before training) and the recent steps.
    for (auto it = calls_by_step_.upper_bound(-1); it != calls_by_step_.end() && it->first < newest_step_ - *steps_kept_;)
      it = calls_by_step_.erase(it);
  }
}

std::string DistinctArgumentRelation::display_name(const Invariant& inv) const {
  const std::string* function = function_of(inv);
  if (function == nullptr) return {};
  return short_api_name(*function) + "() gets different arguments in each call of a step";
}

}  // namespace traincheck
