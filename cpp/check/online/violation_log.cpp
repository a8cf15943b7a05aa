#include "check/online/violation_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include "common/fd_write.h"
#include "common/output_file.h"
#include "common/json_writer.h"
#include "trace/value.h"

namespace traincheck {

namespace {

// CLOCK_MONOTONIC (libstdc++'s steady_clock), the clock of the trace's `time`: detection minus a
// record's time is the detection latency.
int64_t monotonic_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

ViolationLog::ViolationLog(std::string failed_log, size_t max_steps_kept, size_t max_samples_kept)
    : path_(std::move(failed_log)), max_steps_kept_(max_steps_kept), max_samples_kept_(max_samples_kept) {
  fd_ = open_output_fd(path_, OutputMode::Append);
  if (fd_ < 0) throw std::runtime_error(output_open_error(path_, errno));
}

ViolationLog::~ViolationLog() {
  if (fd_ >= 0) ::close(fd_);
}

void ViolationLog::report(OnlineInvariantState& s, OnlineViolation& v) {
  const bool first = s.violations == 0;
  if (v.records.empty())
    count_unwritten(s, v);
  else
    write(s, v);
  if (first && s.violations > 0 && first_violation_observer_) first_violation_observer_(s);
}

void ViolationLog::count_unwritten(OnlineInvariantState& s, const OnlineViolation& v) {
  if (v.unwritten == 0) return;
  if (s.violations == 0) ++invariants_violated_;
  s.violations += v.unwritten;
  violations_ += v.unwritten;
  unwritten_violations_ += v.unwritten;
  if (!s.first_step || v.step < *s.first_step) s.first_step = v.step;
  if (!s.last_step || v.step > *s.last_step) s.last_step = v.step;
  if (s.steps.size() < max_steps_kept_) s.steps.insert(v.step);
}

void ViolationLog::write(OnlineInvariantState& s, OnlineViolation& v) {
  if (s.violations++ == 0) ++invariants_violated_;
  ++violations_;
  std::optional<int64_t> step;  // the violation's: its latest record's
  for (const Record& r : v.records)
    if (r.has_step && (!step || r.step > *step)) step = r.step;
  const bool written = s.lines < kLinesPerInvariant || (step && (!s.last_line_step || *step > *s.last_line_step));
  Array records;
  for (const Record& r : v.records) {
    if (written) records.push_back(r.to_value());
    if (r.has_step) {
      if (!s.first_step || r.step < *s.first_step) {
        s.first_step = r.step;
        s.first_stage = std::string(r.stage);
      }
      if (!s.last_step || r.step >= *s.last_step) {
        s.last_step = r.step;
        s.last_stage = std::string(r.stage);
      }
      if (s.steps.size() < max_steps_kept_) s.steps.insert(r.step);
    }
    if (s.samples.size() < max_samples_kept_) s.samples.push_back(r);
  }
  if (!written) {
    ++unwritten_violations_;
    return;
  }
  ++s.lines;
  if (step && (!s.last_line_step || *step > *s.last_line_step)) s.last_line_step = step;
  if (s.invariant_json.empty()) append_value_json(s.invariant_json, s.invariant->to_value(), JsonStyle::Spaced);
  // The object {violated_id, invariant, display_name (ours: the label, for readers), check_passed,
  // detection_time, trace} as append_value_json writes it (JsonStyle::Spaced), the invariant's text made once.
  std::string line = "{\"violated_id\": ";
  append_json_int(line, static_cast<int64_t>(next_violation_id_++));
  line += ", \"invariant\": ";
  line += s.invariant_json;
  line += ", \"display_name\": ";
  append_json_string(line, s.display_name);
  line += ", \"check_passed\": false, \"detection_time\": ";
  append_json_int(line, monotonic_now_ns());
  line += ", \"trace\": ";
  append_value_json(line, Value::array(std::move(records)), JsonStyle::Spaced);
  line += "}\n";
  if (!write_all(fd_, line)) ++write_errors_;
}

}  // namespace traincheck
