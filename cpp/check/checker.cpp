#include "check/checker.h"

#include <algorithm>
#include <set>

#include "common/assert.h"
#include "common/parallel.h"
#include "relations/registry.h"

namespace traincheck {

size_t TraceCheckReport::count_failed() const {
  return std::count_if(outcomes.begin(), outcomes.end(), [](const InvariantOutcome& o) { return !o.result.passed(); });
}
size_t TraceCheckReport::count_passed() const {
  return std::count_if(outcomes.begin(), outcomes.end(),
                       [](const InvariantOutcome& o) { return o.result.passed() && o.result.triggered; });
}
size_t TraceCheckReport::count_not_triggered() const {
  return std::count_if(outcomes.begin(), outcomes.end(),
                       [](const InvariantOutcome& o) { return o.result.passed() && !o.result.triggered; });
}

TraceCheckReport check_trace(const TraceStore& trace, const std::vector<Invariant>& invariants,
                             const CheckOptions& options, size_t threads) {
  TraceCheckReport report;
  report.name = trace.name();
  report.trace = &trace;
  report.outcomes.resize(invariants.size());
  parallel_for(invariants.size(), threads, [&](size_t i) {
    InvariantOutcome& o = report.outcomes[i];
    o.invariant = &invariants[i];
    o.relation = find_relation(invariants[i].relation);
    TC_ASSERT(o.relation != nullptr, "invariants name registered relations (the codec rejects others)");
    o.result = o.relation->check(trace, invariants[i], options);
    o.display_name = o.relation->display_name(invariants[i]);
    if (o.display_name.empty()) o.display_name = invariants[i].text_description.str();
  });
  return report;
}

std::vector<int64_t> violation_steps(const TraceStore& trace, const InvariantOutcome& outcome) {
  std::set<int64_t> steps;
  for (const Violation& v : outcome.result.violations)
    for (uint32_t r : v.records)
      if (trace.record(r).has_step) steps.insert(trace.record(r).step);
  return std::vector<int64_t>(steps.begin(), steps.end());
}

}  // namespace traincheck
