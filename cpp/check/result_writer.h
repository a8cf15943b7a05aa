// Checker outputs per trace (docs/formats.md §Check outputs): failed.log, passed.log and not_triggered.log
// (indent-4 JSON objects separated by newlines) and violations_summary.json.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <vector>

#include "check/checker.h"
#include "check/violation_summary.h"

namespace traincheck {

// Writes the four files into `dir` (created if needed). Throws std::runtime_error on I/O failure.
void write_trace_results(const std::string& dir, const TraceCheckReport& report);

// The violations_summary.json object: the original's fields, and ours beside them (docs/formats.md
// §Check outputs): each row's violating steps, the number of invariants violated at each step, and,
// offline, the invariants failed / passed / not triggered per relation ("checks"), so that a reader
// (traincheck-export's results.py) displays them without recomputing anything.
Value build_violations_summary(const TraceCheckReport& report);
// `incomplete`: incomplete_trace_value() when records were lost (docs/formats.md §Damaged and incomplete
// traces), else null (no field).
Value build_violations_summary(const std::vector<ViolationSummaryRow>& rows, const Value& checks = Value(),
                               const Value& incomplete = Value());

// Step -> the number of rows violated at it (violations_summary.json's `invariants_violated_per_step`).
std::map<int64_t, int64_t> invariants_per_step(const std::vector<ViolationSummaryRow>& rows);

// {"records_lost": N, "files": [...], "note": the console's line} for violations_summary.json.
Value incomplete_trace_value(uint64_t records_lost, const std::vector<std::string>& files);

// {"total": {"failed", "passed", "not_triggered"}, "by_relation": {relation: {...}}} of an offline check.
Value relation_checks_value(const TraceCheckReport& report);

// Writes violations_summary.json of these rows (traincheck-onlinecheck's, at stop). Throws on I/O failure.
void write_violations_summary_file(const std::string& path, const std::vector<ViolationSummaryRow>& rows,
                                   const Value& checks = Value(), const Value& incomplete = Value());

}  // namespace traincheck
