// Checking relations judged one call at a time from its pre- and post-record (ConsistentOutput,
// ConsistentInputOutput, Threshold, ModuleMode): one check, run online and replayed offline.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <unordered_map>

#include "invariant/held_record.h"
#include "invariant/precondition.h"
#include "invariant/relation.h"

namespace traincheck {

// Whether a complete call satisfies the relation: nullopt when it cannot be judged (skipped, counted
// as triggered when its precondition holds).
using CallVerdict = std::function<std::optional<bool>(const Record& pre, const Record& post)>;

class CallOnlineCheck final : public OnlineCheck {
 public:
  // An empty `function` makes a check that ignores everything (an invariant the offline check cannot
  // evaluate either). `precondition` is the relation's "pre_event" group, if any.
  CallOnlineCheck(std::string function, std::optional<PreconditionGroup> precondition, CallVerdict verdict);
  void on_record(const Record& record, std::vector<OnlineViolation>& violations) override;
  bool triggered() const override { return triggered_; }
  OnlineInterest interest() const override;  // the API's records
  void on_records_lost(int64_t process_id, int64_t thread_id) override;  // the thread's open calls are not judged
  // Calls whose pre-record passed the precondition and whose post has not come yet.
  size_t open_calls() const { return open_.size(); }

 private:
  bool triggered_ = false;
  std::string function_;
  Name name_;  // function_, interned: records are matched by id
  std::optional<PreconditionGroup> precondition_;
  CallVerdict verdict_;
  std::unordered_map<uint64_t, HeldRecord> open_;  // call_key -> pre-record
};

// The "pre_event" group of an invariant's precondition, if it has one.
std::optional<PreconditionGroup> pre_event_group(const Invariant& invariant);


// The offline check: CallOnlineCheck replayed over the stored trace (replay_check.h). Every complete
// call of `function` whose pre-record (with its context managers) satisfies the invariant's "pre_event"
// group is judged; a violation is [pre, post]. --check-relation-first cannot change the outcome (both
// tests decide together), so it is not taken.
CheckResult check_calls(const TraceStore& trace, const Invariant& invariant, std::string_view function,
                        const CheckOptions& options, const CallVerdict& verdict);

}  // namespace traincheck
