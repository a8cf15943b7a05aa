#include "check/report/final_step_counts.h"

namespace traincheck {

std::vector<std::pair<int64_t, int64_t>> FinalStepCounts::take(const std::map<int64_t, int64_t>& invariants_at,
                                                               bool end) {
  std::vector<std::pair<int64_t, int64_t>> out;
  if (invariants_at.empty()) return out;
  const int64_t latest = invariants_at.rbegin()->first;
  auto it = handed_upto_ ? invariants_at.upper_bound(*handed_upto_) : invariants_at.begin();
  for (; it != invariants_at.end() && (end || it->first < latest); ++it) out.emplace_back(it->first, it->second);
  if (!out.empty()) handed_upto_ = out.back().first;
  return out;
}

}  // namespace traincheck
