// Per-step counts of violated invariants, handed out once final, for the W&B / MLflow exporter following a
// live check (report_exporter.h): the counts are the checker's own (invariants_per_step of its violation
// rows, as violations_summary.json writes them at stop), never recounted by the exporter. A step's count is
// final once a violation at a later step has been found (records are checked in step order), or at the
// end; a step handed out is never handed out again (violations of it found later count in the final
// summary only).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace traincheck {

class FinalStepCounts {
 public:
  // (step, invariants violated at it) not handed out yet: those below the latest step of
  // `invariants_at`, or every one with `end`.
  std::vector<std::pair<int64_t, int64_t>> take(const std::map<int64_t, int64_t>& invariants_at, bool end);

 private:
  std::optional<int64_t> handed_upto_;
};

}  // namespace traincheck
