// The offline checker (docs/analysis.md §Offline check): every invariant against one trace, in parallel over
// invariants.
#pragma once

#include <string>
#include <vector>

#include "invariant/relation.h"

namespace traincheck {

struct InvariantOutcome {
  const Invariant* invariant = nullptr;
  const Relation* relation = nullptr;  // never null once checked: invariants name registered relations
  CheckResult result;
  std::string display_name;  // relation's label, or text_description
};

struct TraceCheckReport {
  std::string name;  // output folder name of the trace
  const TraceStore* trace = nullptr;
  std::vector<InvariantOutcome> outcomes;  // parallel to the invariants checked

  size_t count_failed() const;
  size_t count_passed() const;        // triggered and passed
  size_t count_not_triggered() const;
};

// Every invariant must name a registered relation (the invariant codec rejects any other name).
TraceCheckReport check_trace(const TraceStore& trace, const std::vector<Invariant>& invariants,
                             const CheckOptions& options, size_t threads = 0);

// Distinct steps (meta_vars.step) of the records of an outcome's violations, ascending.
std::vector<int64_t> violation_steps(const TraceStore& trace, const InvariantOutcome& outcome);

}  // namespace traincheck
