// DistinctArgumentRelation, online (the rules: distinct_argument.cpp).
//
// Each pre-record of the API with arguments is compared with the calls kept for its step, then kept.
// A step's calls are dropped once the newest step seen is kStepsKept ahead of it: records of the
// ranks of a run, merged by time, drift apart by a step or two, not eight. Calls without a step
// (step -1, before training) are kept for the whole run; there are as many as the script makes.
//
// Same verdicts as the offline check on a finished trace, given records carrying their live context
// managers (the OnlineChecker adds them: check/online/online_context_managers.h).
#include <utility>

#include "relations/distinct_argument.h"

namespace traincheck {

DistinctArgumentOnlineCheck::DistinctArgumentOnlineCheck(std::string function, std::optional<PreconditionGroup> precondition)
    : function_(std::move(function)), precondition_(std::move(precondition)) {}

OnlineInterest DistinctArgumentOnlineCheck::interest() const {
  OnlineInterest i;
  i.all_records = false;
  if (!function_.empty()) i.functions = {function_};
  return i;
}

size_t DistinctArgumentOnlineCheck::kept_calls() const {
  size_t n = 0;
  for (const auto& [step, calls] : calls_by_step_) n += calls.size();
  return n;
}

void DistinctArgumentOnlineCheck::on_record(const Record& r, std::vector<OnlineViolation>& violations) {
  if (function_.empty() || r.type != RecordType::FunctionPre || r.function != function_) return;
  const Value* args = r.get(keys().args);
  if (args == nullptr) return;
  const int64_t step = DistinctArgumentRelation::step_of(r);
  std::vector<Record>& earlier_calls = calls_by_step_[step];
  for (const Record& earlier : earlier_calls) {
    if (precondition_ && !precondition_->holds_on(earlier, r)) continue;
    triggered_ = true;
    if (DistinctArgumentRelation::same_arguments(*earlier.get(keys().args), *args))
      violations.push_back(OnlineViolation{{r, earlier}});
  }
  earlier_calls.push_back(r);
  if (step > newest_step_) {
    newest_step_ = step;
    // Keep -1 (calls before training) and the recent steps.
    for (auto it = calls_by_step_.upper_bound(-1); it != calls_by_step_.end() && it->first < newest_step_ - kStepsKept;)
      it = calls_by_step_.erase(it);
  }
}

}  // namespace traincheck
