// The inference engine (docs/analysis.md §Inference pipeline): generate hypotheses per trace and relation,
// merge them across traces, let each relation combine its merged hypotheses (Relation::combine), drop those
// with at most one positive example, collect examples from the other traces, learn
// preconditions, and return invariants plus failed hypotheses.
//
// Generation runs one task per (trace, relation); collection and precondition learning run one task per
// hypothesis; all on a pool sized to the machine. Output order does not depend on scheduling.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "infer/precondition_learner.h"
#include "invariant/invariant.h"
#include "invariant/relation.h"
#include "trace/trace_store.h"

namespace traincheck {

struct InferOptions {
  PreconditionOptions precondition;
  size_t threads = 0;               // 0: one per hardware thread
  std::ostream* progress = nullptr;  // progress lines; nullptr: silent
};

struct InferResult {
  std::vector<Invariant> invariants;  // sorted by text_description
  std::vector<FailedHypothesis> failed;
  size_t hypotheses = 0;
};

InferResult infer_invariants(const std::vector<const TraceStore*>& traces, const std::vector<const Relation*>& relations,
                             const InferOptions& options);

}  // namespace traincheck
