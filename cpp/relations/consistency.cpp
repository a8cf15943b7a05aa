// ConsistencyRelation
//
// Learns: any two overlapping-in-time states of *different* variable instances, of `t1.a1` and `t2.a2`,
// that satisfy the precondition have equal values (compat §8.2); typically torch.nn.Parameter.data
// across DDP ranks, with a precondition such as "different process, same step, same shape".
// "Overlapping" is an intersection over union of the two states' liveness above 1%.
//
// Params: [VarTypeParam(t1, a1), VarTypeParam(t2, a2)], no values.
// Precondition group: "var" = [the first record of state 1, the first record of state 2] (state_record).
//
// Example invariant:
//   {"relation": "ConsistencyRelation", "params": [
//      {"param_type": "VarTypeParam", "var_type": "torch.nn.Parameter", "attr_name": "data"},
//      {"param_type": "VarTypeParam", "var_type": "torch.nn.Parameter", "attr_name": "data"}],
//    "precondition": {"var": {"inverted": false, "preconditions": [{"clauses": [
//      {"type": "unequal", "prop_name": "process_id", ...}, {"type": "consistent", "prop_name": "meta_vars.step", ...},
//      {"type": "consistent", "prop_name": "attributes.ndim", ...}]}]}}, ...}
//
// How (and what it costs; V instances of the params' types, S states each):
//   - overlapping state pairs of two instances come from a merge of their two state lists, which are
//     ordered and disjoint in time: O(S) per instance pair, O(V²·S) in all instead of the original's
//     O(V²·S²); this is also about the number of pairs a DDP run has (each state overlaps about one
//     state of each other instance);
//   - generation finds hypotheses from equal values only: states are bucketed by value (over all
//     types and attributes), each bucket is swept in start order against the states still live, and a
//     bucket is left as soon as every (type, attr) pair present in it has its two equal overlapping
//     pairs; a value shared by thousands of states (a null grad) costs a few pairs, not their square.
//     Only confirmed hypotheses pay for their examples (the merge above).
//
// Differences from the original:
//   - the offline check reports every violating pair, not only the first (compat §13 item 29), in
//     order of the first state's end;
//   - when both params name the same (type, attr), a pair of instances is taken once (unordered), its
//     earlier-ending state first (ties: by process id, then name): the original visits both orders and
//     would report each violation twice;
//   - inference and both checks judge the same pairs by the same rules, so a trace never violates what
//     was learned from it alone (tests/cpp/infer/self_check_test.cpp). The original differs in three
//     places, each of which can flag a good run: its check compares the initial states its inference
//     skips, preconditions its pairs on their last records where its examples hold the first ones, and
//     compares exactly where inference allows 1e-8. Here the initial states of tensors, modules and
//     parameters are left out everywhere, examples and checks both use the first records (the
//     original's examples; its check, given our invariants, sees the last ones), and every comparison
//     allows 1e-8; a violation's records are the first ones, the step where the values began to differ;
//   - generation buckets by exact value, so two float states within 1e-8 but not equal do not count
//     towards a hypothesis (examples and checks use the 1e-8 tolerance);
//   - hypotheses are not stage-restricted;
//   - "same step" (consistent meta_vars.step) is kept in the precondition whenever every positive has
//     it, even if no negative of the training runs needs it (see precondition_consistent_keys_to_keep).
#include "relations/consistency.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <unordered_map>

#include "invariant/precondition.h"

namespace traincheck {

namespace {

constexpr std::string_view kGroup = "var";

// One side of a (type, attr) pair: instances with that attribute's history.
struct StateList {
  uint32_t var;
  const AttrHistory* history;
};

std::vector<StateList> members_of(const TraceStore& trace, std::string_view type, std::string_view attr) {
  std::vector<StateList> out;
  const std::vector<VarInstance>& vars = trace.var_instances();
  for (uint32_t i = 0; i < vars.size(); ++i)
    if (vars[i].var_type == type)
      if (const AttrHistory* h = vars[i].attr(attr); h != nullptr && !h->states.empty()) out.push_back({i, h});
  return out;
}

// Calls f(i, j) for every pair of overlapping states a[i], b[j] with i, j >= the given firsts.
template <typename F>
void for_each_overlap(const std::vector<AttrState>& a, size_t i, const std::vector<AttrState>& b, size_t j, F&& f) {
  while (i < a.size() && j < b.size()) {
    const AttrState& x = a[i];
    const AttrState& y = b[j];
    if (ConsistencyRelation::overlaps(x.start, x.end, y.start, y.end)) f(i, j);
    // The state ending first cannot meet a later state of the other list (those start at or after
    // the other's current end).
    if (x.end < y.end) ++i;
    else if (y.end < x.end) ++j;
    else ++i, ++j;
  }
}

size_t first_compared_state(const TraceStore& trace, const StateList& m) {
  return ConsistencyRelation::skips_initial_state(trace.var_instances()[m.var].var_type) ? 1 : 0;
}

// Calls f(m1, s1, m2, s2) for every overlapping state pair of different instances of `first` and
// `second` (unordered pairs when `same` lists are one), initial states left out where they are skipped:
// the pairs inference takes examples from and the check judges are these.
template <typename F>
void for_each_pair(const TraceStore& trace, const std::vector<StateList>& first, const std::vector<StateList>& second, bool same,
                   F&& f) {
  for (size_t x = 0; x < first.size(); ++x) {
    for (size_t y = same ? x + 1 : 0; y < second.size(); ++y) {
      const StateList& m1 = first[x];
      const StateList& m2 = second[y];
      if (m1.var == m2.var) continue;
      for_each_overlap(m1.history->states, first_compared_state(trace, m1), m2.history->states, first_compared_state(trace, m2),
                       [&](size_t i, size_t j) { f(m1, i, m2, j); });
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

std::string describe_side(const std::string& type, const std::string& attr) { return type + "." + attr; }

Hypothesis make_hypothesis(const ParamPair& pp) {
  Hypothesis h;
  h.invariant.relation = "ConsistencyRelation";
  h.invariant.params = {Param::var_type_param(pp.t1, pp.a1), Param::var_type_param(pp.t2, pp.a2)};
  h.group_names = {std::string(kGroup)};
  h.invariant.text_description = pp.symmetric()
                                     ? describe_side(pp.t1, pp.a1) + " is consistent across variable instances"
                                     : describe_side(pp.t1, pp.a1) + " is consistent with " + describe_side(pp.t2, pp.a2);
  return h;
}

void collect(const TraceStore& trace, const ParamPair& pp, Hypothesis& h) {
  const std::vector<StateList> first = members_of(trace, pp.t1, pp.a1);
  const std::vector<StateList> second = pp.symmetric() ? first : members_of(trace, pp.t2, pp.a2);
  for_each_pair(trace, first, second, pp.symmetric(),
                [&](const StateList& m1, size_t i, const StateList& m2, size_t j) {
                  const AttrState& s1 = m1.history->states[i];
                  const AttrState& s2 = m2.history->states[j];
                  Example e{&trace, {{ConsistencyRelation::state_record(s1), ConsistencyRelation::state_record(s2)}}};
                  (ConsistencyRelation::close_values(s1.value, s2.value) ? h.positives : h.negatives).push_back(std::move(e));
                });
}

}  // namespace

bool ConsistencyRelation::overlaps(int64_t s1, int64_t e1, int64_t s2, int64_t e2) {
  const int64_t inter = std::min(e1, e2) - std::max(s1, s2);
  if (inter <= 0) return false;
  const int64_t uni = std::max(e1, e2) - std::min(s1, s2);
  return static_cast<double>(inter) > 0.01 * static_cast<double>(uni);
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

std::vector<Hypothesis> ConsistencyRelation::generate(const TraceStore& trace) const {
  // Groups: the (type, attr) histories present; entries: their states (initial ones skipped).
  std::map<std::pair<std::string_view, std::string_view>, uint32_t> group_ids;
  std::vector<std::pair<std::string_view, std::string_view>> groups;
  struct Entry {
    int64_t start, end;
    uint32_t group, var;
  };
  std::unordered_map<Value, std::vector<Entry>, ValueHash> buckets;
  const std::vector<VarInstance>& vars = trace.var_instances();
  for (uint32_t vi = 0; vi < vars.size(); ++vi) {
    const VarInstance& v = vars[vi];
    const size_t first = skips_initial_state(v.var_type) ? 1 : 0;
    for (const AttrHistory& h : v.attrs) {
      if (h.states.size() <= first) continue;
      auto [it, inserted] = group_ids.try_emplace({v.var_type, h.name}, static_cast<uint32_t>(groups.size()));
      if (inserted) groups.emplace_back(v.var_type, h.name);
      for (size_t s = first; s < h.states.size(); ++s)
        buckets[h.states[s].value].push_back(Entry{h.states[s].start, h.states[s].end, it->second, vi});
    }
  }
  // Equal overlapping pairs of different instances per unordered group pair; two make a hypothesis.
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
    std::sort(entries.begin(), entries.end(), [](const Entry& x, const Entry& y) { return x.start < y.start; });
    std::vector<const Entry*> live;
    for (const Entry& e : entries) {
      std::erase_if(live, [&](const Entry* l) { return l->end <= e.start; });
      for (const Entry* l : live) {
        if (l->var == e.var || !overlaps(l->start, l->end, e.start, e.end)) continue;
        int& n = counts[combo(l->group, e.group)];
        if (++n == 2) --open_combos;
        if (open_combos == 0) break;
      }
      if (open_combos == 0) break;
      live.push_back(&e);
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
  // it skips these two for every hypothesis (compat §8.2).
  return {"attributes.data", "attributes.grad"};
}

std::vector<std::string> ConsistencyRelation::precondition_consistent_keys_to_keep() const {
  // A good run whose ranks stay in lockstep has no overlapping states of different steps, so no
  // negative shows that the step matters, and the original drops "same step". A later run with rank
  // skew then compares a rank's step-k state with another's step k-1 and reports the step boundary,
  // not the step where the ranks diverged.
  return {"meta_vars.step"};
}

CheckResult ConsistencyRelation::check(const TraceStore& trace, const Invariant& inv, const CheckOptions& options) const {
  CheckResult result;
  const std::optional<ParamPair> pp = param_pair(inv);
  if (!pp) return result;
  const PreconditionGroup* group = inv.precondition ? inv.precondition->find(kGroup) : nullptr;
  const bool enrich = !trace.context_manager_spans().empty();
  const std::vector<StateList> first = members_of(trace, pp->t1, pp->a1);
  const std::vector<StateList> second = pp->symmetric() ? first : members_of(trace, pp->t2, pp->a2);
  struct Found {
    int64_t end1, end2;
    uint32_t r1, r2;
  };
  std::vector<Found> found;
  std::vector<Field> storage;
  for_each_pair(trace, first, second, pp->symmetric(), [&](const StateList& m1, size_t i, const StateList& m2, size_t j) {
    const AttrState* s1 = &m1.history->states[i];
    const AttrState* s2 = &m2.history->states[j];
    if (pp->symmetric()) {
      // The earlier-ending state first (ties: by process, then name), as the online check reports it.
      const VarInstance& v1 = trace.var_instances()[m1.var];
      const VarInstance& v2 = trace.var_instances()[m2.var];
      if (std::tie(s2->end, v2.process_id, v2.var_name) < std::tie(s1->end, v1.process_id, v1.var_name)) std::swap(s1, s2);
    }
    const uint32_t recs[2] = {state_record(*s1), state_record(*s2)};
    if (group != nullptr) {
      if (enrich) {
        if (!group->holds(make_enriched_views(trace, recs, storage))) return;
      } else {
        const RecordView views[2] = {RecordView{&trace.record(recs[0]), nullptr}, RecordView{&trace.record(recs[1]), nullptr}};
        if (!group->holds(views)) return;
      }
    }
    result.triggered = true;
    if (!close_values(s1->value, s2->value)) found.push_back(Found{s1->end, s2->end, recs[0], recs[1]});
  });
  std::stable_sort(found.begin(), found.end(),
                   [](const Found& a, const Found& b) { return std::tie(a.end1, a.end2) < std::tie(b.end1, b.end2); });
  for (const Found& f : found) result.add_violation(Violation{{f.r1, f.r2}}, options.max_violations);
  return result;
}

std::unique_ptr<OnlineCheck> ConsistencyRelation::make_online_check(const Invariant& inv, const ApiSignatures*) const {
  return std::make_unique<ConsistencyOnlineCheck>(inv);
}

std::string ConsistencyRelation::display_name(const Invariant& inv) const {
  const std::optional<ParamPair> pp = param_pair(inv);
  if (!pp) return {};
  auto side = [](const std::string& type, std::string attr) {
    for (std::string_view prefix : {"_TRAINCHECK_", "_ML_DAIKON_"})
      if (attr.starts_with(prefix)) attr = attr.substr(prefix.size());
    return short_type_name(type) + "." + attr;
  };
  if (pp->symmetric()) return side(pp->t1, pp->a1) + " is consistent across instances";
  return side(pp->t1, pp->a1) + " is consistent with " + side(pp->t2, pp->a2);
}

}  // namespace traincheck
