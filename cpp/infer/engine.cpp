#include "infer/engine.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <ostream>
#include <set>

#include "common/parallel.h"

namespace traincheck {

namespace {

class Progress {
 public:
  Progress(std::ostream* out, std::string what, size_t total) : out_(out), what_(std::move(what)), total_(total) {}
  void tick() {
    if (out_ == nullptr) return;
    std::lock_guard lock(mutex_);
    ++done_;
    const auto now = std::chrono::steady_clock::now();
    if (done_ == total_ || now - last_ > std::chrono::seconds(2)) {
      *out_ << "[infer] " << what_ << ": " << done_ << "/" << total_ << "\n" << std::flush;
      last_ = now;
    }
  }

 private:
  std::ostream* out_;
  std::string what_;
  size_t total_, done_ = 0;
  std::mutex mutex_;
  std::chrono::steady_clock::time_point last_{};
};

// Lets each relation fold its merged hypotheses (Relation::combine). Hypotheses end up grouped by
// relation, in the relations' order, each group in its merged order.
void combine_per_relation(const std::vector<const Relation*>& relations, std::vector<Hypothesis>& hypotheses,
                          std::vector<const Relation*>& owner) {
  std::vector<Hypothesis> combined;
  std::vector<const Relation*> combined_owner;
  for (const Relation* r : relations) {
    std::vector<Hypothesis> mine;
    for (size_t i = 0; i < hypotheses.size(); ++i)
      if (owner[i] == r) mine.push_back(std::move(hypotheses[i]));
    r->combine(mine);
    for (Hypothesis& h : mine) {
      combined.push_back(std::move(h));
      combined_owner.push_back(r);
    }
  }
  hypotheses = std::move(combined);
  owner = std::move(combined_owner);
}

// Frees a hypothesis' examples (clear() alone keeps the vectors' capacity).
void release_examples(Hypothesis& h) {
  std::vector<Example>().swap(h.positives);
  std::vector<Example>().swap(h.negatives);
}

}  // namespace

InferResult infer_invariants(const std::vector<const TraceStore*>& traces, const std::vector<const Relation*>& relations,
                             const InferOptions& options) {
  InferResult result;
  // 1. Generate, one task per (trace, relation).
  const size_t tasks = traces.size() * relations.size();
  std::vector<std::vector<Hypothesis>> generated(tasks);
  Progress gen_progress(options.progress, "generating hypotheses", tasks);
  parallel_for(tasks, options.threads, [&](size_t i) {
    const TraceStore& trace = *traces[i / relations.size()];
    const Relation& rel = *relations[i % relations.size()];
    generated[i] = rel.generate(trace);
    for (Hypothesis& h : generated[i]) {
      if (h.merge_key.empty()) h.merge_key = h.invariant.compact_identity();
      h.generated_by = {&trace};
    }
    gen_progress.tick();
  });

  // 2. Merge equal hypotheses across traces, in trace order (deterministic).
  std::vector<Hypothesis> hypotheses;
  std::vector<const Relation*> owner;
  std::map<std::pair<size_t, std::string>, size_t> index;  // (relation, merge key) -> position
  for (size_t i = 0; i < tasks; ++i) {
    const size_t r = i % relations.size();
    for (Hypothesis& h : generated[i]) {
      auto [it, inserted] = index.try_emplace({r, h.merge_key}, hypotheses.size());
      if (inserted) {
        hypotheses.push_back(std::move(h));
        owner.push_back(relations[r]);
      } else {
        relations[r]->merge(hypotheses[it->second], std::move(h));
      }
    }
  }
  generated.clear();
  combine_per_relation(relations, hypotheses, owner);
  result.hypotheses = hypotheses.size();

  // 3. Hypotheses with at most one positive example are not worth a precondition.
  std::vector<bool> alive(hypotheses.size(), true);
  for (size_t i = 0; i < hypotheses.size(); ++i) {
    if (hypotheses[i].positives.size() > 1) continue;
    alive[i] = false;
  }

  // 4 + 5. Collect examples from the traces that did not generate it, then learn the precondition.
  std::set<std::string> all_stage_set;
  for (const TraceStore* t : traces) all_stage_set.insert(t->stages().begin(), t->stages().end());
  std::vector<std::optional<Invariant>> learned(hypotheses.size());
  std::vector<std::string> failure(hypotheses.size());
  std::vector<std::pair<size_t, size_t>> counts(hypotheses.size());  // (positives, negatives) once learned
  Progress pre_progress(options.progress, "collecting examples and learning preconditions", hypotheses.size());
  parallel_for(hypotheses.size(), options.threads, [&](size_t i) {
    Hypothesis& h = hypotheses[i];
    if (!alive[i]) {
      failure[i] = "only one positive example";
      pre_progress.tick();
      return;
    }
    for (const TraceStore* t : traces)
      if (std::find(h.generated_by.begin(), h.generated_by.end(), t) == h.generated_by.end())
        owner[i]->collect_examples(*t, h);
    std::optional<GroupedPreconditions> pre = find_precondition(
        h, PreconditionKeys{owner[i]->precondition_keys_to_skip(), owner[i]->precondition_consistent_keys_to_keep()},
        options.precondition);
    counts[i] = {h.positives.size(), h.negatives.size()};
    release_examples(h);  // only their counts are needed from here on, and later hypotheses need the memory
    if (!pre) {
      failure[i] = "Precondition not found";
      pre_progress.tick();
      return;
    }
    // Stage restriction (docs/formats.md §Stage restriction), only when it excludes a stage the traces
    // actually have.
    const bool restricts = !h.valid_stages.empty() &&
                           std::any_of(all_stage_set.begin(), all_stage_set.end(), [&](const std::string& s) {
                             return std::find(h.valid_stages.begin(), h.valid_stages.end(), s) == h.valid_stages.end();
                           });
    if (restricts)
      for (auto& [name, group] : pre->groups)
        if (!group.disjuncts.empty()) add_stage_info(group, h.valid_stages);
    Invariant inv = h.invariant;
    inv.precondition = std::move(*pre);
    inv.num_positive_examples = static_cast<int64_t>(counts[i].first);
    inv.num_negative_examples = static_cast<int64_t>(counts[i].second);
    learned[i] = std::move(inv);
    pre_progress.tick();
  });

  for (size_t i = 0; i < hypotheses.size(); ++i) {
    if (learned[i]) {
      result.invariants.push_back(std::move(*learned[i]));
    } else {
      FailedHypothesis f;
      f.invariant = hypotheses[i].invariant;
      f.reason = failure[i];
      const bool learned_from = counts[i].first + counts[i].second > 0;  // else its examples were never released
      f.num_positive_examples = static_cast<int64_t>(learned_from ? counts[i].first : hypotheses[i].positives.size());
      f.num_negative_examples = static_cast<int64_t>(learned_from ? counts[i].second : hypotheses[i].negatives.size());
      result.failed.push_back(std::move(f));
    }
  }
  std::stable_sort(result.invariants.begin(), result.invariants.end(),
                   [](const Invariant& a, const Invariant& b) { return a.text_description < b.text_description; });
  return result;
}

}  // namespace traincheck
