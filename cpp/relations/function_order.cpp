// FunctionCoverRelation and FunctionLeadRelation
//
// Learns the order of two APIs' calls on a thread:
//   - Cover [A, B], "A covers B": every call of B is preceded, since the end of the previous call of B
//     on its thread (or the thread's start), by a complete call of A; e.g. Module.train before
//     Module.eval. Judged per call of B; precondition group "func_cover" = [B's pre-record].
//   - Lead [A, B], "A leads B": between a call of A and the next call of A on its thread, a complete
//     call of B occurs; e.g. eval is followed by train before the next eval. Judged per call of A that
//     another call of A follows (the last one has no next call to bound its window); a thread's only
//     call of A is judged as the original does: some call of B returns after it returned. Group
//     "func_lead" = [that A's pre-record].
// A call that starts before the previous one of its function ended (nested in it) fails. The inner
// call must lie strictly inside the window. Longer params ([A1, A2, A3]) are chains, judged pairwise.
//
// Example invariant:
//   {"relation": "FunctionCoverRelation", "params": [
//      {"param_type": "APIParam", "api_full_name": "torch.nn.modules.module.Module.train"},
//      {"param_type": "APIParam", "api_full_name": "torch.nn.modules.module.Module.eval"}],
//    "precondition": {"func_cover": {"inverted": false, "preconditions": [{"clauses": []}]}}, ...}
//
// Candidates: functions not skipped for analysis that never have more than 4 records in a row on a
// thread (a leaf call's pre and post both count, so per-iteration hot APIs drop out). A pair becomes a
// hypothesis when some call of A and some call of B on one thread do not overlap ("same level") and
// the trace has a positive example.
//
// How (and what it costs): calls are bucketed per thread and function once; the same-level test is
// O(1) per pair and thread from each function's earliest end and latest start (the original compares
// every pair of calls, O(n_A·n_B)); a window's inner calls are found by binary search on start time.
// Inference judges examples with the walk below; checking, online and offline, runs one check
// (function_order_online.cpp): offline checking replays the stored trace through it
// (relations/replay_check.h). The two apply the same rules (tests/cpp/infer/self_check_test.cpp).
//
// Differences from the original:
//   - online, a thread's only call of A is judged at the end of the trace (OnlineCheck::on_trace_end):
//     in-process when the process exits; traincheck-onlinecheck, which cannot know that a trace it
//     follows has ended, never judges it;
//   - the window of a Cover call begins at the previous call of B whatever its precondition, offline
//     and online alike (the original's online check restarts it only at calls satisfying it);
//   - the offline check reports every violation, not only the first; a violation's records are
//     [the judged call's pre-record (Cover: B; Lead: the next A), the pre-record that opened the window]
//     (a thread's only call of A: [its pre-record]);
//   - hypotheses are not merged into chains (chains in invariant files are checked pairwise).
#include "relations/function_order.h"

#include <algorithm>
#include <limits>
#include <set>
#include <unordered_map>

#include "invariant/precondition.h"
#include "relations/function_pool.h"
#include "relations/replay_check.h"

namespace traincheck {

namespace {

std::string_view group_name(FunctionOrder order) { return order == FunctionOrder::Cover ? "func_cover" : "func_lead"; }

// One judged call: the example's record, the verdict and a violation's evidence.
struct Judgement {
  uint32_t subject_pre;
  bool ok;
  std::vector<uint32_t> evidence;
};

// Whether a complete call of `inner` (indices by start time) lies strictly inside (lo, hi).
bool complete_call_inside(const TraceStore& trace, const std::vector<uint32_t>& inner, int64_t lo, int64_t hi) {
  auto it = std::upper_bound(inner.begin(), inner.end(), lo,
                             [&](int64_t t, uint32_t ci) { return t < trace.calls()[ci].start; });
  for (; it != inner.end() && trace.calls()[*it].start < hi; ++it) {
    const CallEvent& c = trace.calls()[*it];
    if (c.status == CallStatus::Complete && c.end < hi) return true;
  }
  return false;
}

// Judges the calls of one thread. `a` and `b`: the thread's calls of A and B (not incomplete), by start.
template <typename F>
void walk_thread(const TraceStore& trace, FunctionOrder order, const std::vector<uint32_t>& a, const std::vector<uint32_t>& b,
                 F&& judged) {
  const std::vector<CallEvent>& calls = trace.calls();
  if (order == FunctionOrder::Cover) {
    int64_t window_start = std::numeric_limits<int64_t>::min();
    const CallEvent* previous = nullptr;
    for (uint32_t bi : b) {
      const CallEvent& call = calls[bi];
      const bool nested = previous != nullptr && call.start < window_start;
      const bool ok = !nested && complete_call_inside(trace, a, window_start, call.start);
      std::vector<uint32_t> evidence{call.pre};
      if (previous != nullptr) evidence.push_back(previous->pre);
      judged(Judgement{call.pre, ok, std::move(evidence)});
      window_start = std::max(window_start, call.end);
      previous = &call;
    }
    return;
  }
  if (a.size() == 1) {
    // A thread's only call of A: some call of B returns after it did (as the original judges it).
    const CallEvent& call = calls[a[0]];
    const bool ok = std::any_of(b.begin(), b.end(), [&](uint32_t bi) { return calls[bi].end > call.end; });
    judged(Judgement{call.pre, ok, {call.pre}});
    return;
  }
  for (size_t i = 0; i + 1 < a.size(); ++i) {
    const CallEvent& call = calls[a[i]];
    const CallEvent& next = calls[a[i + 1]];
    const bool ok = next.start > call.end && complete_call_inside(trace, b, call.end, next.start);
    judged(Judgement{call.pre, ok, {next.pre, call.pre}});
  }
}

// Calls (not incomplete) of the given functions, per thread index, by start time.
using CallsByThread = std::vector<std::unordered_map<std::string_view, std::vector<uint32_t>>>;

CallsByThread calls_by_thread(const TraceStore& trace, const std::set<std::string_view>& functions) {
  CallsByThread out(trace.threads().size());
  for (size_t t = 0; t < trace.threads().size(); ++t)
    for (uint32_t ci : trace.threads()[t].calls) {
      const CallEvent& c = trace.calls()[ci];
      const std::string_view fn = trace.function_of(c);
      if (c.status != CallStatus::Incomplete && functions.count(fn)) out[t][fn].push_back(ci);
    }
  return out;
}

const std::vector<uint32_t>& calls_or_none(const std::unordered_map<std::string_view, std::vector<uint32_t>>& m,
                                           std::string_view fn) {
  static const std::vector<uint32_t> none;
  auto it = m.find(fn);
  return it == m.end() ? none : it->second;
}

// Judges every thread for the pair (first, second) = (A, B).
template <typename F>
void walk_pair(const TraceStore& trace, FunctionOrder order, const CallsByThread& by_thread, std::string_view first,
               std::string_view second, F&& judged) {
  for (const auto& per_function : by_thread)
    walk_thread(trace, order, calls_or_none(per_function, first), calls_or_none(per_function, second), judged);
}

Hypothesis make_hypothesis(FunctionOrder order, std::string_view first, std::string_view second) {
  Hypothesis h;
  h.invariant.relation = order == FunctionOrder::Cover ? "FunctionCoverRelation" : "FunctionLeadRelation";
  h.invariant.params = {Param::api(first), Param::api(second)};
  h.group_names = {std::string(group_name(order))};
  const Name a = h.invariant.params[0].api_full_name, b = h.invariant.params[1].api_full_name;
  h.invariant.text_description = order == FunctionOrder::Cover
                                     ? SharedText() + a + " is called before every call of " + b
                                     : SharedText() + a + " is followed by a call of " + b + " before its next call";
  return h;
}

void collect(const TraceStore& trace, FunctionOrder order, const CallsByThread& by_thread, Hypothesis& h) {
  const std::string_view first = h.invariant.params[0].api_full_name;
  const std::string_view second = h.invariant.params[1].api_full_name;
  walk_pair(trace, order, by_thread, first, second, [&](const Judgement& j) {
    (j.ok ? h.positives : h.negatives).push_back(Example{&trace, {{j.subject_pre}}});
  });
}

// The consecutive pairs of an invariant's API params; empty when a param is not an APIParam.
std::vector<std::pair<std::string, std::string>> api_pairs(const Invariant& inv) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const Param& p : inv.params)
    if (p.type != ParamType::Api) return {};
  for (size_t i = 0; i + 1 < inv.params.size(); ++i)
    out.emplace_back(inv.params[i].api_full_name, inv.params[i + 1].api_full_name);
  return out;
}

}  // namespace

std::string_view FunctionOrderRelation::name() const {
  return order_ == FunctionOrder::Cover ? "FunctionCoverRelation" : "FunctionLeadRelation";
}

std::vector<std::string_view> FunctionOrderRelation::candidate_functions(const TraceStore& trace) {
  return functions_without_long_runs(trace, kMaxConsecutiveRecords);
}

std::vector<Hypothesis> FunctionOrderRelation::generate(const TraceStore& trace) const {
  const std::vector<std::string_view> pool = candidate_functions(trace);
  const CallsByThread by_thread = calls_by_thread(trace, std::set<std::string_view>(pool.begin(), pool.end()));
  // Same level on some thread: a call of one ends before a call of the other starts.
  std::set<std::pair<std::string_view, std::string_view>> pairs;
  for (const auto& per_function : by_thread) {
    struct Bounds {
      std::string_view fn;
      int64_t earliest_end, latest_start;
    };
    std::vector<Bounds> bounds;
    for (const auto& [fn, list] : per_function) {
      Bounds b{fn, std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()};
      for (uint32_t ci : list) {
        b.earliest_end = std::min(b.earliest_end, trace.calls()[ci].end);
        b.latest_start = std::max(b.latest_start, trace.calls()[ci].start);
      }
      bounds.push_back(b);
    }
    for (const Bounds& x : bounds)
      for (const Bounds& y : bounds)
        if (x.fn != y.fn && (x.earliest_end < y.latest_start || y.earliest_end < x.latest_start)) pairs.emplace(x.fn, y.fn);
  }
  std::vector<Hypothesis> out;
  for (const auto& [first, second] : pairs) {
    Hypothesis h = make_hypothesis(order_, first, second);
    collect(trace, order_, by_thread, h);
    if (!h.positives.empty()) out.push_back(std::move(h));
  }
  return out;
}

void FunctionOrderRelation::collect_examples(const TraceStore& trace, Hypothesis& h) const {
  if (h.invariant.params.size() != 2) return;
  const std::set<std::string_view> fns{h.invariant.params[0].api_full_name, h.invariant.params[1].api_full_name};
  collect(trace, order_, calls_by_thread(trace, fns), h);
}

CheckResult FunctionOrderRelation::check(const TraceStore& trace, const Invariant& inv, const CheckOptions& options) const {
  const std::unique_ptr<OnlineCheck> check = make_online_check(inv);
  return replay_check(trace, inv, *check, options);
}

std::unique_ptr<OnlineCheck> FunctionOrderRelation::make_online_check(const Invariant& inv, const ApiSignatures*) const {
  std::optional<PreconditionGroup> precondition;
  if (const PreconditionGroup* g = inv.precondition_group(group_name(order_))) precondition = *g;
  std::vector<std::unique_ptr<OnlineCheck>> checks;
  for (const auto& [first, second] : api_pairs(inv))
    checks.push_back(std::make_unique<FunctionOrderOnlineCheck>(order_, first, second, precondition));
  if (checks.size() == 1) return std::move(checks.front());
  return std::make_unique<OnlineCheckChain>(std::move(checks));
}

std::string FunctionOrderRelation::display_name(const Invariant& inv) const {
  const std::vector<std::pair<std::string, std::string>> pairs = api_pairs(inv);
  if (pairs.empty()) return {};
  std::string out;
  for (const auto& [first, second] : pairs) {
    if (!out.empty()) out += "; ";
    out += order_ == FunctionOrder::Cover
               ? short_api_name(first) + "() before each " + short_api_name(second) + "()"
               : short_api_name(second) + "() between two " + short_api_name(first) + "() calls";
  }
  return out;
}

}  // namespace traincheck
