// ConsistentOutputRelation checked record by record.
//
// A pre-record of the API that passes the precondition is kept until its call's post-record (or
// exception record) arrives; the post is then judged by ConsistentOutputRelation::outputs_match, the
// offline check's verdict, and a violation carries [pre, post] as offline. State: the open calls of the
// API (one per thread at a time for a non-reentrant API), dropped when they close; calls that never
// close stay, as offline they are incomplete and unchecked.
//
// Same verdicts as the offline check on a finished trace, except for clauses on
// meta_vars.context_managers.* (not tracked online, as for APIContain: the field is absent, so such a
// clause does not hold and the call is not checked).
#include <utility>

#include "relations/consistent_output.h"

namespace traincheck {

namespace {
constexpr std::string_view kGroup = "pre_event";
}  // namespace

ConsistentOutputOnlineCheck::ConsistentOutputOnlineCheck(const Invariant& inv) {
  // An invariant the offline check cannot evaluate (it returns an empty result) is ignored here too.
  if (inv.params.size() < 2 || inv.params[0].type != ParamType::Api) return;
  const Param& out = inv.params[1];
  if (out.type != ParamType::VarType || !out.const_value) return;
  valid_ = true;
  function_ = inv.params[0].api_full_name;
  attr_ = out.attr_name;
  expected_ = *out.const_value;
  if (inv.precondition)
    if (const PreconditionGroup* g = inv.precondition->find(kGroup)) precondition_ = *g;
}

OnlineInterest ConsistentOutputOnlineCheck::interest() const {
  OnlineInterest i;
  i.all_records = false;
  if (valid_) i.functions = {function_};
  return i;
}

void ConsistentOutputOnlineCheck::on_record(const Record& r, std::vector<OnlineViolation>& violations) {
  if (!valid_ || !r.is_api() || r.function != function_) return;
  if (r.type == RecordType::FunctionPre) {
    if (precondition_) {
      const RecordView view{&r, nullptr};
      if (!precondition_->holds(std::span<const RecordView>(&view, 1))) return;
    }
    open_.insert_or_assign(std::string(r.func_call_id), r);
    return;
  }
  auto it = open_.find(std::string(r.func_call_id));
  if (it == open_.end()) return;
  Record pre = std::move(it->second);
  open_.erase(it);
  if (r.type != RecordType::FunctionPost) return;  // an exception: not checked, as offline
  triggered_ = true;
  if (!ConsistentOutputRelation::outputs_match(r, attr_, expected_))
    violations.push_back(OnlineViolation{{std::move(pre), r}});
}

}  // namespace traincheck
