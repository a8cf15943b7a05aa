#include "infer/precondition_learner.h"

#include <algorithm>
#include <deque>
#include <map>
#include <random>
#include <set>
#include <unordered_map>

namespace traincheck {

namespace {

constexpr std::string_view kCandidatePrefixes[] = {"process_id", "thread_id", "meta_vars", "var_name",
                                                   "function",   "exception", "attributes", "var_type"};
constexpr std::string_view kContextPrefix = "meta_vars.context_managers.";
constexpr size_t kMaxConstantStrings = 4;  // more distinct strings than this become `consistent`
constexpr size_t kMaxConstantNumbers = 1;  // more distinct non-strings than this become `consistent`

// Identities of one run: a process's or a thread's id is another number in every run, so a precondition
// never holds them as values (a `constant` clause), only as a relation between an example's records
// (`consistent`: all in one process; `unequal`). A constant on them holds on no other run, or, inverted,
// on every other run: "A is followed by B, except in process 24058" is an exception made for one
// training program, and was a third of the alarms when invariants learned from six programs checked
// others (docs/differences.md §Inference, eval/detection/README.md).
bool is_run_identity(std::string_view name) { return name == "process_id" || name == "thread_id"; }

bool is_candidate(std::string_view name, const std::vector<std::string>& skip) {
  if (std::none_of(std::begin(kCandidatePrefixes), std::end(kCandidatePrefixes),
                   [&](std::string_view p) { return name.starts_with(p); }))
    return false;
  return std::none_of(skip.begin(), skip.end(), [&](const std::string& s) { return name.find(s) != std::string_view::npos; });
}

// A merged clause and the positives (positions in the current positive list) that support it.
struct Candidate {
  Clause clause;
  std::string key;
  std::vector<uint32_t> ids;  // sorted
};

Conjunction make_conjunction(std::vector<Clause> clauses) {
  std::sort(clauses.begin(), clauses.end(), [](const Clause& a, const Clause& b) { return a.key() < b.key(); });
  Conjunction c;
  c.clauses = std::move(clauses);
  return c;
}

class Learner {
 public:
  Learner(const std::vector<ExampleView>& examples, const PreconditionKeys& keys, const PreconditionOptions& opt)
      : examples_(examples), keys_(keys), opt_(opt), local_(examples.size()), local_done_(examples.size(), false) {}

  // The clauses every positive supports that the relation keeps regardless of negatives; with no
  // negatives at all they are the whole precondition (none: unconditional).
  Conjunction kept_base(const std::vector<uint32_t>& pos) {
    std::vector<Clause> base;
    for (Candidate& c : merged_candidates(pos))
      if (kept(c) && c.ids.size() == pos.size()) base.push_back(std::move(c.clause));
    if (base.empty()) return Conjunction{true, {}};
    return make_conjunction(std::move(base));
  }

  std::vector<Conjunction> solve(const std::vector<uint32_t>& pos, const std::vector<uint32_t>& neg, int depth,
                                 bool skip_pruning) {
    if (depth > opt_.max_depth || pos.empty()) return {};
    if (neg.empty()) return {kept_base(pos)};
    std::vector<Candidate> cands = merged_candidates(pos);

    // Which clauses ever reject a negative, and which negatives survive the base clauses.
    std::vector<bool> rejects(cands.size(), false);
    std::vector<bool> neg_passes(neg.size(), true);
    for (size_t c = 0; c < cands.size(); ++c) {
      const bool base = cands[c].ids.size() == pos.size();
      for (size_t n = 0; n < neg.size(); ++n) {
        if (!base && rejects[c]) break;
        if (base && !neg_passes[n] && rejects[c]) continue;
        if (!cands[c].clause.holds(examples_[neg[n]])) {
          rejects[c] = true;
          if (base) neg_passes[n] = false;
        }
      }
    }
    if (!skip_pruning) {
      std::vector<Candidate> kept;
      for (size_t c = 0; c < cands.size(); ++c) {
        if (rejects[c] || this->kept(cands[c])) kept.push_back(std::move(cands[c]));
        else pruned_.insert(cands[c].key);
      }
      cands = std::move(kept);
    }
    std::vector<Clause> base;
    for (const Candidate& c : cands)
      if (c.ids.size() == pos.size()) base.push_back(c.clause);
    std::vector<uint32_t> passing;
    for (size_t n = 0; n < neg.size(); ++n)
      if (neg_passes[n]) passing.push_back(neg[n]);
    if (passing.empty()) return {make_conjunction(base)};

    // Split the positives by the example sets of the non-base clauses; maximal sets first.
    std::set<std::vector<uint32_t>> sets;
    for (const Candidate& c : cands)
      if (c.ids.size() < pos.size()) sets.insert(c.ids);
    std::vector<std::vector<uint32_t>> ordered(sets.begin(), sets.end());
    std::stable_sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
    std::vector<std::vector<uint32_t>> top;
    for (const auto& s : ordered) {
      const bool absorbed = std::any_of(top.begin(), top.end(), [&](const auto& t) {
        return std::includes(t.begin(), t.end(), s.begin(), s.end());
      });
      if (!absorbed) top.push_back(s);
    }
    std::vector<bool> covered(pos.size(), false);
    for (const auto& t : top)
      for (uint32_t i : t) covered[i] = true;
    if (std::find(covered.begin(), covered.end(), false) != covered.end()) return {};

    std::vector<Conjunction> result;
    for (const auto& t : top) {
      std::vector<uint32_t> sub;
      for (uint32_t i : t) sub.push_back(pos[i]);
      for (Conjunction& child : solve(sub, passing, depth + 1, true)) {
        // The base clauses are what rejected the other negatives; keep them in every branch.
        std::set<std::string> have;
        for (const Clause& cl : child.clauses) have.insert(cl.key());
        std::vector<Clause> all = child.clauses;
        for (const Clause& b : base)
          if (!have.count(b.key())) all.push_back(b);
        result.push_back(make_conjunction(std::move(all)));
      }
    }
    result = remove_supersets(std::move(result));
    for (uint32_t p : pos) {
      const bool ok = std::any_of(result.begin(), result.end(), [&](const Conjunction& c) { return c.holds(examples_[p]); });
      if (!ok) return {};
    }
    return result;
  }

 private:
  // Local clauses of an example (ids into clauses_); the same at every depth, so computed once. Most
  // are the same clause for every example (same process, same function), so each distinct clause is
  // kept once: held per example, clauses were most of the learner's memory (bench/memory_bench).
  const std::vector<uint32_t>& local(uint32_t example) {
    if (!local_done_[example]) {
      std::vector<uint32_t>& ids = local_[example];
      for (Clause& c : find_local_clauses(examples_[example], keys_.skip)) {
        std::string key = c.key();
        auto [it, inserted] = clause_ids_.try_emplace(key, static_cast<uint32_t>(clauses_.size()));
        if (inserted) clauses_.emplace_back(std::move(c), std::move(key));
        ids.push_back(it->second);
      }
      // A clause once per example, however many of its fields gave it: merged_candidates counts examples.
      std::sort(ids.begin(), ids.end());
      ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
      ids.shrink_to_fit();
      local_done_[example] = true;
    }
    return local_[example];
  }

  std::vector<Candidate> merged_candidates(const std::vector<uint32_t>& pos) {
    std::map<std::string, Candidate> exact;
    for (uint32_t i = 0; i < pos.size(); ++i) {
      for (uint32_t id : local(pos[i])) {
        const auto& [c, key] = clauses_[id];
        if (pruned_.count(key)) continue;
        auto [it, inserted] = exact.try_emplace(key);
        if (inserted) it->second = Candidate{c, key, {}};
        it->second.ids.push_back(i);
      }
    }
    // Group non-bool constants by property; too many distinct values become one `consistent`, and so do
    // two or more of a field the relation keeps consistent (a Consistency invariant learned on a model of
    // four parameters pairs them by name, as one of forty does), and any of a run's identities.
    std::map<std::string, std::vector<std::string>> by_prop;
    for (const auto& [key, cand] : exact)
      if (cand.clause.type == ClauseType::Constant && cand.clause.prop_dtype != "bool")
        by_prop[cand.clause.prop_name + "\x1f" + to_json(cand.clause.additional_path)].push_back(key);
    for (const auto& [prop, members] : by_prop) {
      size_t strings = 0, others = 0;
      for (const std::string& k : members) (exact[k].clause.values.front().is_string() ? strings : others)++;
      const Clause& first = exact[members.front()].clause;
      const bool keep = members.size() > 1 && std::find(keys_.keep_consistent.begin(), keys_.keep_consistent.end(),
                                                        first.prop_name) != keys_.keep_consistent.end();
      if (!keep && !is_run_identity(first.prop_name) && strings <= kMaxConstantStrings && others <= kMaxConstantNumbers) continue;
      Clause consistent = Clause::make(ClauseType::Consistent, first.prop_name, first.prop_dtype, {}, first.additional_path);
      std::set<uint32_t> ids;
      for (const std::string& k : members) {
        ids.insert(exact[k].ids.begin(), exact[k].ids.end());
        exact.erase(k);
      }
      std::string key = consistent.key();
      if (pruned_.count(key)) continue;
      auto [it, inserted] = exact.try_emplace(key);
      if (inserted) it->second = Candidate{consistent, key, {}};
      ids.insert(it->second.ids.begin(), it->second.ids.end());
      it->second.ids.assign(ids.begin(), ids.end());
    }
    std::vector<Candidate> out;
    out.reserve(exact.size());
    for (auto& [key, cand] : exact) out.push_back(std::move(cand));
    return out;
  }

  static std::vector<Conjunction> remove_supersets(std::vector<Conjunction> conjs) {
    std::vector<std::set<std::string>> keys;
    for (const Conjunction& c : conjs) {
      std::set<std::string> k;
      for (const Clause& cl : c.clauses) k.insert(cl.key());
      keys.push_back(std::move(k));
    }
    std::vector<Conjunction> out;
    std::vector<std::set<std::string>> kept_keys;
    for (size_t i = 0; i < conjs.size(); ++i) {
      bool drop = false;
      for (size_t j = 0; j < conjs.size() && !drop; ++j) {
        if (i == j) continue;
        const bool superset = std::includes(keys[i].begin(), keys[i].end(), keys[j].begin(), keys[j].end());
        // Equal sets: keep the first only.
        if (superset && (keys[i].size() > keys[j].size() || j < i)) drop = true;
      }
      if (!drop) out.push_back(std::move(conjs[i]));
    }
    return out;
  }

  bool kept(const Candidate& c) const {
    return c.clause.type == ClauseType::Consistent &&
           std::find(keys_.keep_consistent.begin(), keys_.keep_consistent.end(), c.clause.prop_name) != keys_.keep_consistent.end();
  }

  const std::vector<ExampleView>& examples_;
  const PreconditionKeys& keys_;
  const PreconditionOptions& opt_;
  std::vector<std::vector<uint32_t>> local_;  // per example: its local clauses
  std::vector<bool> local_done_;
  std::vector<std::pair<Clause, std::string>> clauses_;  // distinct local clauses, with their keys
  std::unordered_map<std::string, uint32_t> clause_ids_;  // key -> position in clauses_
  std::set<std::string> pruned_;  // per learner, i.e. per group of one hypothesis
};

std::vector<uint32_t> sample_indices(size_t n, const PreconditionOptions& opt, uint64_t salt) {
  std::vector<uint32_t> idx(n);
  for (size_t i = 0; i < n; ++i) idx[i] = static_cast<uint32_t>(i);
  if (!opt.sampling || n <= opt.sampling_threshold) return idx;
  std::mt19937_64 rng(opt.seed + salt);
  for (size_t i = 0; i < opt.sampling_threshold; ++i) {
    std::uniform_int_distribution<size_t> pick(i, n - 1);
    std::swap(idx[i], idx[pick(rng)]);
  }
  idx.resize(opt.sampling_threshold);
  std::sort(idx.begin(), idx.end());
  return idx;
}

}  // namespace

std::vector<Clause> find_local_clauses(const ExampleView& example, const std::vector<std::string>& skip) {
  std::vector<Clause> out;
  if (example.empty()) return out;
  example.front().for_each_field([&](const Field& f) {
    std::string_view name = key_name(f.key);
    if (!is_candidate(name, skip)) return;
    std::vector<const Value*> values;
    for (const RecordView& r : example) {
      const Value* v = r.get(f.key);
      if (v == nullptr || v->is_nan()) return;
      values.push_back(v);
    }
    if (name.starts_with(kContextPrefix)) {
      out.push_back(Clause::make(ClauseType::Exist, std::string(name), "None"));
      if (!values.front()->is_object()) return;
      for (const Member& m : values.front()->as_object()) {
        if (!m.value.is_hashable() || m.value.is_nan()) continue;
        const bool same = std::all_of(values.begin(), values.end(), [&](const Value* v) {
          const Value* a = v->find(m.key);
          return a != nullptr && *a == m.value;
        });
        if (same)
          out.push_back(Clause::make(ClauseType::Constant, std::string(name), std::string(m.value.python_type_name()),
                                     {m.value}, Value::array({Value::string(std::string(key_name(m.key)))})));
      }
      return;
    }
    for (const Value* v : values)
      if (!v->is_hashable()) return;
    std::vector<const Value*> distinct;
    bool has_none = false;
    for (const Value* v : values) {
      if (v->is_null()) has_none = true;
      if (std::none_of(distinct.begin(), distinct.end(), [&](const Value* d) { return *d == *v; })) distinct.push_back(v);
    }
    const std::string dtype(values.front()->python_type_name());
    if (distinct.size() == 1)
      out.push_back(Clause::make(ClauseType::Constant, std::string(name), dtype, {*values.front()}));
    else if (distinct.size() == values.size() && !has_none)
      out.push_back(Clause::make(ClauseType::Unequal, std::string(name), dtype));
  });
  return out;
}

PreconditionGroup learn_precondition_group(const std::vector<ExampleView>& positives,
                                           const std::vector<ExampleView>& negatives,
                                           const PreconditionKeys& keys, const PreconditionOptions& options) {
  PreconditionGroup group;
  if (positives.empty()) return group;
  std::vector<ExampleView> all;
  all.reserve(positives.size() + negatives.size());
  all.insert(all.end(), positives.begin(), positives.end());
  all.insert(all.end(), negatives.begin(), negatives.end());
  std::vector<uint32_t> pos(positives.size()), neg(negatives.size());
  for (uint32_t i = 0; i < pos.size(); ++i) pos[i] = i;
  for (uint32_t i = 0; i < neg.size(); ++i) neg[i] = static_cast<uint32_t>(positives.size() + i);
  {
    Learner learner(all, keys, options);
    group.disjuncts = learner.solve(pos, neg, 0, false);
  }
  if (group.disjuncts.empty() && !neg.empty()) {
    // "Holds unless ...": learn what the negatives share, then negate
    // (docs/analysis.md §Precondition learning, step 11).
    Learner learner(all, keys, options);
    group.disjuncts = learner.solve(neg, pos, 0, false);
    group.inverted = !group.disjuncts.empty();
  }
  return group;
}

std::optional<GroupedPreconditions> find_precondition(const Hypothesis& h, const PreconditionKeys& keys,
                                                      const PreconditionOptions& options) {
  GroupedPreconditions out;
  bool any = false;
  const std::vector<uint32_t> pos_idx = sample_indices(h.positives.size(), options, 0);
  const std::vector<uint32_t> neg_idx = sample_indices(h.negatives.size(), options, 1);
  for (size_t g = 0; g < h.group_names.size(); ++g) {
    std::deque<std::vector<Field>> storage;  // context-manager fields the views point into
    auto views_of = [&](const std::vector<Example>& list, const std::vector<uint32_t>& idx) {
      std::vector<ExampleView> views;
      views.reserve(idx.size());
      for (uint32_t i : idx) {
        const Example& e = list[i];
        if (g >= e.groups.size() || e.groups[g].empty()) continue;
        storage.emplace_back();
        views.push_back(make_enriched_views(*e.trace, e.groups[g], storage.back()));
      }
      return views;
    };
    std::vector<ExampleView> pos = views_of(h.positives, pos_idx);
    std::vector<ExampleView> neg = views_of(h.negatives, neg_idx);
    PreconditionGroup group = learn_precondition_group(pos, neg, keys, options);
    if (!group.disjuncts.empty()) any = true;
    out.groups.emplace_back(h.group_names[g], std::move(group));
  }
  if (!any) return std::nullopt;
  return out;
}

}  // namespace traincheck
