// The online checker's violation log: each violation a check finds, counted against its invariant's
// state and appended to <out>/failed.log at once, one JSON object per line:
//   {"violated_id": n, "invariant": {...}, "display_name": "...", "check_passed": false,
//    "detection_time": <CLOCK_MONOTONIC ns>, "trace": [records]}
// (the original's fields, plus our label; one write() per entry, so a reader tailing the file never sees
// half of one, and the processes of one run may share the file: O_APPEND).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "invariant/relation.h"

namespace traincheck {

// Per invariant: what the report and the summary need.
struct OnlineInvariantState {
  const Invariant* invariant = nullptr;
  const Relation* relation = nullptr;      // nullptr: not registered (an invariant built in code, not read)
  const OnlineCheck* check = nullptr;      // nullptr: not checked online (owned by the dispatcher)
  uint32_t member = 0;                     // this invariant's place among the check's (OnlineCheck::members)
  std::string display_name;
  // The invariant as its failed.log lines hold it (JSON), made at its first written violation: an
  // invariant violated by every pair of a model's parameters writes thousands of lines a step.
  std::string invariant_json;
  uint64_t violations = 0;
  uint64_t lines = 0;                      // failed.log lines written for it
  std::optional<int64_t> last_line_step;   // the step of its last line

  std::set<int64_t> steps;                 // at most max_steps_kept, the earliest ones
  std::optional<int64_t> first_step, last_step;
  std::string first_stage, last_stage;
  std::vector<Record> samples;             // at most max_samples_kept

  // The precondition held at least once, or a violation was found.
  bool triggered() const { return violations > 0 || (check != nullptr && check->member_triggered(member)); }
};

class ViolationLog {
 public:
  // Lines an invariant writes before it writes only the first violation of each later step (the rest
  // counted, as unwritten_violations): an invariant violated by most pairs of a model's parameters wrote
  // 1000 lines a step, and 100 of them 150 MB a step at 50k parameters. Every violating step of an
  // invariant still has a line.
  static constexpr uint64_t kLinesPerInvariant = 10000;

  // Opens (appends to) `failed_log`; throws std::runtime_error naming it when it cannot.
  ViolationLog(std::string failed_log, size_t max_steps_kept, size_t max_samples_kept);
  ~ViolationLog();
  ViolationLog(const ViolationLog&) = delete;
  ViolationLog& operator=(const ViolationLog&) = delete;

  // Counts `violation` against `state` (steps, stages, samples) and writes it, unless it is a count with
  // no records (OnlineViolation::unwritten) or the invariant is past kLinesPerInvariant lines and its
  // step has a line. At the invariant's first violation, tells the observer.
  void report(OnlineInvariantState& state, OnlineViolation& violation);
  // Called once per invariant, with its state, when its first violation has been reported.
  void set_first_violation_observer(std::function<void(const OnlineInvariantState&)> observer) {
    first_violation_observer_ = std::move(observer);
  }

  const std::string& path() const { return path_; }
  uint64_t violations() const { return violations_; }
  size_t invariants_violated() const { return invariants_violated_; }
  uint64_t unwritten_violations() const { return unwritten_violations_; }
  uint64_t write_errors() const { return write_errors_; }

 private:
  void count_unwritten(OnlineInvariantState& state, const OnlineViolation& violation);
  void write(OnlineInvariantState& state, OnlineViolation& violation);

  std::string path_;
  size_t max_steps_kept_;
  size_t max_samples_kept_;
  int fd_ = -1;
  uint64_t next_violation_id_ = 0;
  uint64_t violations_ = 0;
  size_t invariants_violated_ = 0;
  uint64_t unwritten_violations_ = 0;
  uint64_t write_errors_ = 0;
  std::function<void(const OnlineInvariantState&)> first_violation_observer_;
};

}  // namespace traincheck
