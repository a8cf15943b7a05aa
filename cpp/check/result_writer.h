// Checker outputs per trace (docs/formats.md §Check outputs): failed.log, passed.log and not_triggered.log
// (indent-4 JSON objects separated by newlines) and violations_summary.json.
#pragma once

#include <string>

#include "check/checker.h"

namespace traincheck {

// Writes the four files into `dir` (created if needed). Throws std::runtime_error on I/O failure.
void write_trace_results(const std::string& dir, const TraceCheckReport& report);

// The violations_summary.json object.
Value build_violations_summary(const TraceCheckReport& report);

}  // namespace traincheck
