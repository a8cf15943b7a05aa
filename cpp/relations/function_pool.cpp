#include "relations/function_pool.h"

#include <algorithm>
#include <unordered_map>

#include "relations/registry.h"

namespace traincheck {

std::vector<std::string_view> functions_without_long_runs(const TraceStore& trace, size_t max_consecutive_records) {
  std::unordered_map<std::string_view, size_t> longest_run;
  for (const ThreadInfo& t : trace.threads()) {
    std::string_view current;
    size_t run = 0;
    for (uint32_t ri : t.records) {
      const Record& r = trace.record(ri);
      if (!r.is_api()) continue;  // state records live in other files: they do not break a run
      run = r.function == current ? run + 1 : 1;
      current = r.function;
      size_t& longest = longest_run[current];
      longest = std::max(longest, run);
    }
  }
  std::vector<std::string_view> out;
  for (std::string_view fn : trace.functions()) {
    auto it = longest_run.find(fn);
    if (it != longest_run.end() && it->second <= max_consecutive_records && !is_analysis_skipped_function(fn))
      out.push_back(fn);
  }
  return out;
}

}  // namespace traincheck
