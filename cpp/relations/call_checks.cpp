// Checking relations judged per call (ConsistentOutput, ConsistentInputOutput, Threshold, ModuleMode):
// one check, CallOnlineCheck, fed records as they are written (online) or the stored trace in order
// (offline: check_calls replays it, relations/replay_check.h). A pre-record of the API that passes the
// precondition is kept until its call's post-record (or exception record) arrives; the post is then
// judged by the relation's verdict, and a violation carries [pre, post]. State: the API's open calls
// (one per thread at a time for a non-reentrant API), dropped when they close; calls that never close
// (incomplete) and calls that raised are never judged.
#include "relations/call_checks.h"

#include <utility>

#include "relations/call_key.h"
#include "relations/consistent_output.h"
#include "relations/replay_check.h"

namespace traincheck {

CallOnlineCheck::CallOnlineCheck(std::string function, std::optional<PreconditionGroup> precondition, CallVerdict verdict)
    : function_(std::move(function)), name_(function_), precondition_(std::move(precondition)), verdict_(std::move(verdict)) {}

OnlineInterest CallOnlineCheck::interest() const {
  OnlineInterest i;
  i.all_records = false;
  if (!function_.empty()) i.functions = {function_};
  return i;
}

void CallOnlineCheck::on_records_lost(int64_t process_id, int64_t thread_id) {
  std::erase_if(open_, [&](const auto& entry) {
    const Record& pre = *entry.second;
    return pre.process_id == process_id && pre.thread_id == thread_id;
  });
}

void CallOnlineCheck::on_record(const Record& r, std::vector<OnlineViolation>& violations) {
  if (function_.empty() || !r.is_api() || r.function != name_) return;
  if (r.type == RecordType::FunctionPre) {
    if (precondition_ && !precondition_->holds_on(r)) return;
    open_[call_key(r)].hold(r, lasting_records_);
    return;
  }
  auto it = open_.find(call_key(r));
  if (it == open_.end() || it->second->func_call_id() != r.func_call_id()) return;
  const HeldRecord pre = std::move(it->second);
  open_.erase(it);
  if (r.type != RecordType::FunctionPost) return;  // an exception: not checked, as offline
  triggered_ = true;
  if (!verdict_(*pre, r).value_or(true)) violations.push_back(OnlineViolation{{*pre, r}});
}

std::optional<PreconditionGroup> pre_event_group(const Invariant& inv) {
  if (const PreconditionGroup* g = inv.precondition_group(kPreEventGroup)) return *g;
  return std::nullopt;
}

CheckResult check_calls(const TraceStore& trace, const Invariant& inv, std::string_view function,
                        const CheckOptions& options, const CallVerdict& verdict) {
  CallOnlineCheck check(std::string(function), pre_event_group(inv), verdict);
  return replay_check(trace, inv, check, options);
}

}  // namespace traincheck
