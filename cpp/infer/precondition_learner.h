// Precondition inference (docs/analysis.md §Precondition learning): find a disjunction of conjunctions of
// clauses that every positive example satisfies (at least one conjunction) and no negative example does.
//
// Differences from the original, deliberate (docs/differences.md §Inference lists them):
//   - the pruned-clause set is scoped to one group of one hypothesis (the original's mutable default
//     argument leaked pruned clauses across all hypotheses of a run);
//   - sampling follows the options (--disable-precond-sampling, --precond-sampling-threshold) instead
//     of a hard-coded 5000.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "invariant/precondition.h"
#include "invariant/relation.h"

namespace traincheck {

struct PreconditionOptions {
  bool sampling = true;
  size_t sampling_threshold = 10000;  // per list (positives, negatives)
  uint64_t seed = 42;
  int max_depth = 8;
};

// One example as the learner sees it: its (enriched) records.
using ExampleView = std::vector<RecordView>;

// What a relation tells the learner about the fields of its examples.
struct PreconditionKeys {
  // Substrings of field names the learner must not use (Relation::precondition_keys_to_skip).
  std::vector<std::string> skip;
  // Fields whose `consistent` clause is kept whenever every positive supports it, even when no negative
  // needs it (Relation::precondition_consistent_keys_to_keep). A good run may simply lack the negatives
  // that would show a clause matters.
  std::vector<std::string> keep_consistent;
};

// Learns one group. An empty result (no disjuncts) means "not found"; `inverted` is set when only the
// swapped problem (negatives as positives) had a solution.
PreconditionGroup learn_precondition_group(const std::vector<ExampleView>& positives,
                                           const std::vector<ExampleView>& negatives,
                                           const PreconditionKeys& keys, const PreconditionOptions& options);

// Learns every group of a hypothesis (examples enriched with context managers at depth 0). nullopt
// when every group came back empty (the hypothesis fails).
std::optional<GroupedPreconditions> find_precondition(const Hypothesis& hypothesis, const PreconditionKeys& keys,
                                                      const PreconditionOptions& options);

// The clauses one example supports on its own (step 4 of docs/analysis.md §Precondition learning); exposed
// for tests.
std::vector<Clause> find_local_clauses(const ExampleView& example, const std::vector<std::string>& keys_to_skip);

}  // namespace traincheck
