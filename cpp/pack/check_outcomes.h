// What one program's offline check said about each invariant: read back from the per-trace folder that
// traincheck-check writes (docs/formats.md §Check outputs): passed.log, failed.log, not_triggered.log.
// The logs hold JSON objects indented by 4 spaces, each starting on a line that begins with '{'.
#pragma once

#include <map>
#include <stdexcept>
#include <string>

namespace traincheck {

enum class CheckOutcome { NotTriggered, Passed, Violated };

// Invariant identity (Invariant::identity) -> outcome. An identity in two logs is an error.
using OutcomesByIdentity = std::map<std::string, CheckOutcome>;

class CheckOutcomeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Reads the three logs of `trace_check_dir` (a missing log counts as empty). Throws CheckOutcomeError
// naming the file and the object's first line when an object is not an invariant result.
OutcomesByIdentity read_check_outcomes(const std::string& trace_check_dir);

}  // namespace traincheck
