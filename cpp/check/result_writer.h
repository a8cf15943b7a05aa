// Checker outputs per trace (docs/formats.md §Check outputs): failed.log, passed.log and not_triggered.log
// (indent-4 JSON objects separated by newlines) and violations_summary.json.
#pragma once

#include <string>

#include <vector>

#include "check/checker.h"
#include "check/violation_summary.h"

namespace traincheck {

// Writes the four files into `dir` (created if needed). Throws std::runtime_error on I/O failure.
void write_trace_results(const std::string& dir, const TraceCheckReport& report);

// The violations_summary.json object.
Value build_violations_summary(const TraceCheckReport& report);
Value build_violations_summary(const std::vector<ViolationSummaryRow>& rows);

// Writes violations_summary.json of these rows (traincheck-onlinecheck's, at stop). Throws on I/O failure.
void write_violations_summary_file(const std::string& path, const std::vector<ViolationSummaryRow>& rows);

}  // namespace traincheck
