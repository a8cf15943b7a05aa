// ConsistencyRelation
//
// Learns: at the end of every step, any two *different* variable instances of `t1.a1` and `t2.a2` that
// satisfy the precondition hold equal values; typically torch.nn.Parameter.data across DDP
// ranks, with a precondition such as "different process, same shape".
//
// Params: [VarTypeParam(t1, a1), VarTypeParam(t2, a2)], no values.
// Precondition group: "var" = [instance 1's last record of the step, instance 2's last record of it].
//
// Example invariant:
//   {"relation": "ConsistencyRelation", "params": [
//      {"param_type": "VarTypeParam", "var_type": "torch.nn.Parameter", "attr_name": "data"},
//      {"param_type": "VarTypeParam", "var_type": "torch.nn.Parameter", "attr_name": "data"}],
//    "precondition": {"var": {"inverted": false, "preconditions": [{"clauses": [
//      {"type": "unequal", "prop_name": "process_id", ...}, {"type": "consistent", "prop_name": "meta_vars.step", ...},
//      {"type": "consistent", "prop_name": "attributes.ndim", ...}]}]}}, ...}
//
// How (and what it costs; V instances of the params' types, T steps):
//   - each instance's history is reduced to its *step ends*: per step, its last record and the value it
//     holds (step_ends); two instances are compared at every step both have;
//   - the check groups each step's ends by what the precondition compares (consistency_pairs.h) and
//     counts violating pairs per group: O(V·T) for a precondition of one conjunction, however many pairs
//     violate; only the violations kept (CheckOptions::max_violations) are enumerated;
//   - inference's examples are still every pair (O(V²·T)): each pair is an example the precondition
//     learner reads;
//   - generation finds hypotheses from equal values only: step ends are bucketed by value (over all
//     types and attributes), each bucket is grouped by step, and a bucket is left as soon as every
//     (type, attr) pair present in it has two equal pairs, so a widely shared value (a null grad)
//     costs a few comparisons; only confirmed hypotheses pay for their examples (the merge above).
//
// Differences from the original:
//   - instances are compared step by step, never by wall-clock overlap of their states (the original's
//     "intersection over union above 1%"): ranks whose dumps lag by tens of milliseconds, or a tracker
//     that writes several states within a step (inside the optimizer's step and zero_grad), gave
//     verdicts that changed from run to run; a record without a step counts as step -1;
//   - the offline check reports every violating pair, not only the first (docs/differences.md §Checking), in
//     step order; when both params name the same (type, attr), a pair of instances is taken once (unordered),
//     the instance with the smaller (process id, name) first: the original visits both orders and would
//     report each violation twice;
//   - inference and both checks judge the same pairs by the same rules, so a trace never violates what
//     was learned from it alone (tests/cpp/infer/self_check_test.cpp): the initial state of tensors,
//     modules and parameters is left out everywhere (the original's check compares what its inference
//     skips), examples and checks show the same records, and every comparison allows 1e-8 (the
//     original's check is exact);
//   - generation buckets by exact value, so two float values within 1e-8 but not equal do not count
//     towards a hypothesis (examples and checks use the 1e-8 tolerance);
//   - hypotheses are not stage-restricted;
//   - "same step" (consistent meta_vars.step) is kept in the precondition whenever every positive has
//     it (see precondition_consistent_keys_to_keep); with step pairing it always holds;
//   - an equal pair is no example when its value is held by two or more instances of the same process at
//     that step (Coincidences): zero-initialised biases of two layers are equal on every rank, and as
//     positives they asked the precondition to pair different parameters, which no clause can, so the
//     DDP invariant of a model whose biases start at zero was never learned.
//
// Checking: the one relation whose offline check is not its online check replayed (relations/
// replay_check.h). The verdict is one, consistency_pairs.h (step ends, grouping and counting by
// precondition, value comparison), with two small drivers: `check` below over the store's step ends, and
// ConsistencyOnlineCheck (consistency_online.cpp) over records as they come. A replay would change the
// offline results the goldens pin: which 1000 violations are kept (offline: step order, then the
// instances' order in the trace; online: the order in which each pair's second end finished, which a
// replay could only restore by holding every step's pairs), and where a pair's context-manager fields
// come from (offline: its earlier record, as the original enriches the pair; online: each record's own).
#include "relations/consistency.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <map>
#include <unordered_map>

#include "invariant/precondition.h"
#include "relations/consistency_pairs.h"

namespace traincheck {

namespace {

// One side of a (type, attr) pair: an instance with that attribute's history, reduced to step ends.
struct StateList {
  uint32_t var;
  const AttrHistory* history;
  std::vector<ConsistencyRelation::StepEnd> ends;
};

std::vector<StateList> members_of(const TraceStore& trace, std::string_view type, std::string_view attr) {
  std::vector<StateList> out;
  const std::vector<VarInstance>& vars = trace.var_instances();
  for (uint32_t i = 0; i < vars.size(); ++i)
    if (vars[i].var_type == type)
      if (const AttrHistory* h = vars[i].attr(attr); h != nullptr && !h->states.empty())
        out.push_back({i, h, ConsistencyRelation::step_ends(trace, *h, ConsistencyRelation::skips_initial_state(type))});
  return out;
}

// Calls f(m1, e1, m2, e2) for every step both instances have, for every pair of different instances of
// `first` and `second` (unordered pairs, the smaller (process, name) first, when the lists are one): the
// pairs inference takes examples from and the check judges are these.
template <typename F>
void for_each_pair(const TraceStore& trace, const std::vector<StateList>& first, const std::vector<StateList>& second, bool same,
                   F&& f) {
  const std::vector<VarInstance>& vars = trace.var_instances();
  auto before = [&](const StateList& a, const StateList& b) {
    return ConsistencyRelation::first_of_pair(vars[a.var].process_id, vars[a.var].var_name, vars[b.var].process_id,
                                              vars[b.var].var_name);
  };
  for (size_t x = 0; x < first.size(); ++x) {
    for (size_t y = same ? x + 1 : 0; y < second.size(); ++y) {
      const StateList* m1 = &first[x];
      const StateList* m2 = &second[y];
      if (m1->var == m2->var) continue;
      if (same && before(*m2, *m1)) std::swap(m1, m2);
      size_t i = 0, j = 0;
      while (i < m1->ends.size() && j < m2->ends.size()) {
        const ConsistencyRelation::StepEnd& a = m1->ends[i];
        const ConsistencyRelation::StepEnd& b = m2->ends[j];
        if (a.step < b.step) ++i;
        else if (b.step < a.step) ++j;
        else {
          if (a.compared && b.compared) f(*m1, a, *m2, b);
          ++i, ++j;
        }
      }
    }
  }
}

struct ParamPair {
  std::string t1, a1, t2, a2;
  bool symmetric() const { return t1 == t2 && a1 == a2; }
};

std::optional<ParamPair> param_pair(const Invariant& inv) {
  if (inv.params.size() < 2) return std::nullopt;
  const Param& p = inv.params[0];
  const Param& q = inv.params[1];
  if (p.type != ParamType::VarType || q.type != ParamType::VarType) return std::nullopt;
  return ParamPair{p.var_type, p.attr_name, q.var_type, q.attr_name};
}

SharedText describe_side(Name type, Name attr) { return SharedText() + type + "." + attr; }

Hypothesis make_hypothesis(const ParamPair& pp) {
  Hypothesis h;
  h.invariant.relation = "ConsistencyRelation";
  h.invariant.params = {Param::var_type_param(pp.t1, pp.a1), Param::var_type_param(pp.t2, pp.a2)};
  h.group_names = {std::string(ConsistencyRelation::kGroup)};
  const Param &p = h.invariant.params[0], &q = h.invariant.params[1];
  h.invariant.text_description = pp.symmetric()
                                     ? describe_side(p.var_type, p.attr_name) + " is consistent across variable instances"
                                     : describe_side(p.var_type, p.attr_name) + " is consistent with " +
                                           describe_side(q.var_type, q.attr_name);
  return h;
}

// The values that two or more instances of one list hold at the end of one step in one process: a
// coincidence (biases initialised to zero, grads not set yet), not a sign that instances agree, since
// different variables of one process are never replicas of each other.
class Coincidences {
 public:
  Coincidences(const TraceStore& trace, const std::vector<StateList>& members) {
    for (const StateList& m : members) {
      const int64_t process = trace.var_instances()[m.var].process_id;
      for (const ConsistencyRelation::StepEnd& e : m.ends)
        if (e.compared) ++holders_[{process, e.step}][m.history->states[e.state].value];
    }
  }
  bool has(int64_t process, int64_t step, const Value& value) const {
    auto it = holders_.find({process, step});
    if (it == holders_.end()) return false;
    auto v = it->second.find(value);
    return v != it->second.end() && v->second > 1;
  }

 private:
  std::map<std::pair<int64_t, int64_t>, std::unordered_map<Value, int, ValueHash>> holders_;
};

void collect(const TraceStore& trace, const ParamPair& pp, Hypothesis& h) {
  const std::vector<StateList> first = members_of(trace, pp.t1, pp.a1);
  const std::vector<StateList> second = pp.symmetric() ? first : members_of(trace, pp.t2, pp.a2);
  const Coincidences first_coincidences(trace, first);
  const std::optional<Coincidences> second_coincidences =
      pp.symmetric() ? std::nullopt : std::optional<Coincidences>(Coincidences(trace, second));
  const Coincidences& in_second = second_coincidences ? *second_coincidences : first_coincidences;
  const std::vector<VarInstance>& vars = trace.var_instances();
  for_each_pair(trace, first, second, pp.symmetric(),
                [&](const StateList& m1, const ConsistencyRelation::StepEnd& a, const StateList& m2,
                    const ConsistencyRelation::StepEnd& b) {
                  const Value& v1 = m1.history->states[a.state].value;
                  const Value& v2 = m2.history->states[b.state].value;
                  const bool equal = ConsistencyRelation::close_values(v1, v2);
                  // An equal pair whose value is a coincidence in either process shows nothing about
                  // these two instances: no example. (The check never flags an equal pair, so what is
                  // learned from a trace still holds on it.)
                  if (equal && (first_coincidences.has(vars[m1.var].process_id, a.step, v1) ||
                                in_second.has(vars[m2.var].process_id, b.step, v2)))
                    return;
                  (equal ? h.positives : h.negatives).push_back(Example{&trace, {{a.record, b.record}}});
                });
}

}  // namespace

int64_t ConsistencyRelation::step_of(const Record& r) { return r.has_step ? r.step : -1; }

std::vector<ConsistencyRelation::StepEnd> ConsistencyRelation::step_ends(const TraceStore& trace, const AttrHistory& history,
                                                                         bool skip_initial) {
  std::vector<StepEnd> ends;
  for (uint32_t s = 0; s < history.states.size(); ++s) {
    for (uint32_t r : history.records_of(s)) {
      const int64_t step = step_of(trace.record(r));
      const bool compared = !(skip_initial && s == 0);
      if (!ends.empty() && ends.back().step == step) ends.back() = StepEnd{step, r, s, compared};
      else ends.push_back(StepEnd{step, r, s, compared});
    }
  }
  // Steps go up in time within a process; should one come back (a script setting the step by hand),
  // its latest end wins.
  std::stable_sort(ends.begin(), ends.end(), [](const StepEnd& a, const StepEnd& b) { return a.step < b.step; });
  std::vector<StepEnd> out;
  for (const StepEnd& e : ends) {
    if (!out.empty() && out.back().step == e.step) out.back() = e;
    else out.push_back(e);
  }
  return out;
}

bool ConsistencyRelation::skips_initial_state(std::string_view type) {
  std::string lower(type);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower.find("tensor") != std::string::npos || lower.find("module") != std::string::npos ||
         lower.find("parameter") != std::string::npos;
}

bool ConsistencyRelation::close_values(const Value& a, const Value& b) {
  if (a.is_double() || b.is_double())
    if (a.is_number() && b.is_number()) return std::fabs(a.as_double() - b.as_double()) <= 1e-8;
  return a == b;
}

namespace {

// An entry pairs only with another of equal value at the same step: equal (value, step), equal hash.
uint64_t value_step_hash(const Value& v, int64_t step) {
  uint64_t h = static_cast<uint64_t>(v.hash()) ^ (static_cast<uint64_t>(step) * 0x9E3779B97F4A7C15ULL);
  h = (h ^ (h >> 31)) * 0xBF58476D1CE4E5B9ULL;
  return h ^ (h >> 29);
}

}  // namespace

std::vector<Hypothesis> ConsistencyRelation::generate(const TraceStore& trace) const {
  // Groups: the (type, attr) histories present; entries: their compared step ends.
  std::map<std::pair<std::string_view, std::string_view>, uint32_t> group_ids;
  std::vector<std::pair<std::string_view, std::string_view>> groups;
  struct Entry {
    int64_t step;
    uint32_t group, var;
  };
  const std::vector<VarInstance>& vars = trace.var_instances();
  // Calls f(value, step, group, var) for every compared step end, in one fixed order.
  auto for_each_entry = [&](auto&& f) {
    for (uint32_t vi = 0; vi < vars.size(); ++vi) {
      const VarInstance& v = vars[vi];
      const bool skip_initial = skips_initial_state(v.var_type);
      for (const AttrHistory& h : v.attrs) {
        if (h.states.empty()) continue;
        const std::vector<StepEnd> ends = step_ends(trace, h, skip_initial);
        if (std::none_of(ends.begin(), ends.end(), [](const StepEnd& e) { return e.compared; })) continue;
        auto [it, inserted] = group_ids.try_emplace({v.var_type, h.name}, static_cast<uint32_t>(groups.size()));
        if (inserted) groups.emplace_back(v.var_type, h.name);
        for (const StepEnd& e : ends)
          if (e.compared) f(h.states[e.state].value, e.step, it->second, vi);
      }
    }
  };
  // Most step ends hold a value no other instance holds at that step (a digest): they can pair with
  // nothing, so a first pass finds the (value, step) hashes seen more than once, and only entries with
  // one of those are bucketed. The buckets of every step end were a fifth of traincheck-infer's peak
  // memory (bench/memory_bench); leaving out entries that pair with nothing changes no count below.
  std::vector<uint64_t> repeated;
  for_each_entry([&](const Value& value, int64_t step, uint32_t, uint32_t) { repeated.push_back(value_step_hash(value, step)); });
  std::sort(repeated.begin(), repeated.end());
  size_t kept = 0;
  for (size_t i = 0; i + 1 < repeated.size();) {
    size_t j = i + 1;
    while (j < repeated.size() && repeated[j] == repeated[i]) ++j;
    if (j - i > 1) repeated[kept++] = repeated[i];
    i = j;
  }
  repeated.resize(kept);
  repeated.shrink_to_fit();
  std::unordered_map<Value, std::vector<Entry>, ValueHash> buckets;
  for_each_entry([&](const Value& value, int64_t step, uint32_t group, uint32_t var) {
    if (std::binary_search(repeated.begin(), repeated.end(), value_step_hash(value, step))) buckets[value].push_back(Entry{step, group, var});
  });
  std::vector<uint64_t>().swap(repeated);
  // Equal pairs of different instances at one step, per unordered group pair; two make a hypothesis.
  std::map<std::pair<uint32_t, uint32_t>, int> counts;
  auto combo = [](uint32_t a, uint32_t b) { return a < b ? std::pair{a, b} : std::pair{b, a}; };
  for (auto& [value, entries] : buckets) {
    if (entries.size() < 2) continue;
    std::vector<uint32_t> present;
    for (const Entry& e : entries) present.push_back(e.group);
    std::sort(present.begin(), present.end());
    present.erase(std::unique(present.begin(), present.end()), present.end());
    size_t open_combos = 0;
    for (size_t a = 0; a < present.size(); ++a)
      for (size_t b = a; b < present.size(); ++b) open_combos += counts[{present[a], present[b]}] < 2;
    if (open_combos == 0) continue;
    std::sort(entries.begin(), entries.end(), [](const Entry& x, const Entry& y) {
      return std::tie(x.step, x.group, x.var) < std::tie(y.step, y.group, y.var);
    });
    for (size_t lo = 0; lo < entries.size() && open_combos > 0;) {
      size_t hi = lo;
      while (hi < entries.size() && entries[hi].step == entries[lo].step) ++hi;
      for (size_t x = lo; x < hi && open_combos > 0; ++x)
        for (size_t y = x + 1; y < hi && open_combos > 0; ++y) {
          if (entries[x].var == entries[y].var) continue;
          int& n = counts[combo(entries[x].group, entries[y].group)];
          if (++n == 2) --open_combos;
        }
      lo = hi;
    }
  }
  std::vector<Hypothesis> out;
  for (const auto& [key, n] : counts) {
    if (n < 2) continue;
    const ParamPair pp{std::string(groups[key.first].first), std::string(groups[key.first].second),
                       std::string(groups[key.second].first), std::string(groups[key.second].second)};
    Hypothesis h = make_hypothesis(pp);
    collect(trace, pp, h);
    out.push_back(std::move(h));
  }
  return out;
}

void ConsistencyRelation::collect_examples(const TraceStore& trace, Hypothesis& h) const {
  if (const std::optional<ParamPair> pp = param_pair(h.invariant)) collect(trace, *pp, h);
}

std::vector<std::string> ConsistencyRelation::precondition_keys_to_skip() const {
  // What the original means to skip (the compared attribute); its tuple-built key never matched, so
  // it skips these two for every hypothesis.
  return {"attributes.data", "attributes.grad"};
}

std::vector<std::string> ConsistencyRelation::precondition_consistent_keys_to_keep() const {
  // A good run whose ranks stay in lockstep has no overlapping states of different steps, so no
  // negative shows that the step matters, and the original drops "same step". A later run with rank
  // skew then compares a rank's step-k state with another's step k-1 and reports the step boundary,
  // not the step where the ranks diverged.
  // var_name: replicas are one variable on several ranks. When every equal pair a good run shows is of
  // one name, pairing by name is what it shows, however few the names: the learner otherwise keeps up to
  // four names as constants, and a model of four parameters learned "pair any two of the same size",
  // which a model with repeated shapes (any transformer) violates on every pair of different layers.
  return {"meta_vars.step", "var_name"};
}

CheckResult ConsistencyRelation::check(const TraceStore& trace, const Invariant& inv, const CheckOptions& options) const {
  CheckResult result;
  const std::optional<ParamPair> pp = param_pair(inv);
  if (!pp) return result;
  const PreconditionGroup* group = inv.precondition_group(ConsistencyRelation::kGroup);
  const bool enrich = !trace.context_manager_spans().empty();
  const bool symmetric = pp->symmetric();
  const std::vector<VarInstance>& vars = trace.var_instances();
  // The first record of a pair: the smaller (process, name) of the two instances when both params are one.
  auto ordered = [&](const PairEnd& x, const PairEnd& y) {
    if (symmetric && first_of_pair(vars[y.instance].process_id, vars[y.instance].var_name, vars[x.instance].process_id,
                                   vars[x.instance].var_name))
      return std::pair{&y, &x};
    return std::pair{&x, &y};
  };
  std::vector<Field> storage;
  const PairCondition condition(
      group,
      [&](const PairEnd& x, const PairEnd& y) {
        if (group == nullptr) return true;
        const auto [a, b] = ordered(x, y);
        if (!enrich) return group->holds_on(*a->record, *b->record);
        const uint32_t recs[2] = {a->record_index, b->record_index};
        return group->holds(make_enriched_views(trace, recs, storage));
      },
      enrich);
  // Every compared step end, per step and side, in the order of the instances in the trace.
  std::map<int64_t, std::array<std::vector<PairEnd>, 2>> by_step;
  for (int side = 0; side < (symmetric ? 1 : 2); ++side)
    for (const StateList& m : members_of(trace, side == 0 ? pp->t1 : pp->t2, side == 0 ? pp->a1 : pp->a2))
      for (const StepEnd& e : m.ends)
        if (e.compared) by_step[e.step][side].push_back(PairEnd{&trace.record(e.record), &m.history->states[e.state].value, m.var, e.record});
  // Per step, each end of the first side against the index of the second, in the order the pairs were
  // always visited (first side's instance, then the second's), so the violations kept are the first ones.
  // Unordered pairs: an end leaves the index before it is judged, so it meets only the ends after it.
  for (auto& [step, sides] : by_step) {
    const std::vector<PairEnd>& xs = sides[0];
    const std::vector<PairEnd>& ys = symmetric ? sides[0] : sides[1];
    if (xs.empty() || ys.empty()) continue;
    StepEndIndex index(condition);
    for (const PairEnd& y : ys) index.add(y);
    for (uint32_t i = 0; i < xs.size(); ++i) {
      if (symmetric) index.remove(i);
      const PairTally tally = index.tally(xs[i]);
      if (tally.triggered > 0) result.triggered = true;
      if (tally.violations == 0) continue;
      const size_t room = result.violations.size() < options.max_violations ? options.max_violations - result.violations.size() : 0;
      const size_t kept = index.violations(xs[i], room, [&](uint32_t pos) {
        const auto [a, b] = ordered(xs[i], index.at(pos));
        result.add_violation(Violation{{a->record_index, b->record_index}}, options.max_violations);
      });
      result.violation_count += tally.violations - kept;
    }
  }
  return result;
}

std::unique_ptr<OnlineCheck> ConsistencyRelation::make_online_check(const Invariant& inv, const ApiSignatures*) const {
  return std::make_unique<ConsistencyOnlineCheck>(inv);
}

std::vector<Relation::OnlineCheckOf> ConsistencyRelation::make_online_checks(const std::vector<const Invariant*>& invariants,
                                                                             const ApiSignatures*) const {
  std::vector<OnlineCheckOf> checks;
  std::map<std::string, std::vector<size_t>> sharing;  // shared_work_key -> positions, in order
  std::vector<const std::vector<size_t>*> order;       // groups by first member
  for (size_t i = 0; i < invariants.size(); ++i) {
    std::string key = ConsistencyOnlineCheck::shared_work_key(*invariants[i]);
    if (key.empty()) {  // checked by nothing online: a check of its own, which never triggers
      checks.push_back(OnlineCheckOf{std::make_unique<ConsistencyOnlineCheck>(*invariants[i]), {i}});
      continue;
    }
    auto [it, added] = sharing.try_emplace(std::move(key));
    it->second.push_back(i);
    if (added) order.push_back(&it->second);
  }
  for (const std::vector<size_t>* members : order) {
    std::vector<const Invariant*> group;
    for (size_t i : *members) group.push_back(invariants[i]);
    checks.push_back(OnlineCheckOf{std::make_unique<ConsistencyOnlineCheck>(group), *members});
  }
  return checks;
}

std::string ConsistencyRelation::display_name(const Invariant& inv) const {
  const std::optional<ParamPair> pp = param_pair(inv);
  if (!pp) return {};
  auto side = [](const std::string& type, std::string attr) {
    for (std::string_view prefix : {kToolPrefix, kLegacyToolPrefix})
      if (attr.starts_with(prefix)) attr = attr.substr(prefix.size());
    return short_type_name(type) + "." + attr;
  };
  if (pp->symmetric()) return side(pp->t1, pp->a1) + " is consistent across instances";
  return side(pp->t1, pp->a1) + " is consistent with " + side(pp->t2, pp->a2);
}

}  // namespace traincheck
