// The functions a relation over call patterns may use (docs/relations.md §Candidate functions): not skipped
// for analysis (registry.h), and never more than `max_consecutive_records` of their records in a row on a
// thread (a leaf call's pre and post both count), which leaves out per-iteration hot APIs.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "trace/trace_store.h"

namespace traincheck {

// Sorted by name.
std::vector<std::string_view> functions_without_long_runs(const TraceStore& trace, size_t max_consecutive_records);

}  // namespace traincheck
