// APIContainRelation's check (docs/analysis.md §Online check), from records seen one at a time (delivery
// contract: OnlineCheck in invariant/relation.h): run online, and replayed offline over the stored trace
// (ApiContainRelation::check, relations/replay_check.h), where a var child is fed only its attribute's
// state starts, the only records on_state acts on.
//
// State, all bounded:
//   - per (pid, tid), a stack of the open calls that matter: parent calls whose precondition held
//     (with a copy of their pre-record, the violation's evidence) and, for an API child, child calls
//     whose name and arguments match (waiting for their outcome). An entry is dropped when its call
//     closes, a thread's stack when it empties; depth is the call nesting depth.
//   - for a var child, the last value of the child's attribute per variable instance
//     (pid, var_name, var_type) of the child's type: one Value per tracked variable.
// The original instead keeps every call and every state of the run and scans the child's calls so far
// on each parent post (docs/analysis.md §Online check); here a record costs O(stack depth) at most.
//
// How it agrees with the store's view of the trace, which inference's examples use (same matching
// helpers, same interval rules as ApiContainRelation::contains; fed a finished trace in delivery order it
// gives exactly the replay's violations, which tests/cpp/relations/api_contain_online_test.cpp compares
// on every hypothesis of a synthetic run):
//   - the precondition ("parent_func_call_pre") is evaluated on the parent's pre-record when it arrives;
//   - an API child counts for a checked parent below it on its thread's stack that started strictly
//     before it and ends strictly after it (the store's "contained calls"), if its pre-record matches
//     (name, arguments) and its outcome does (an exception post only for a child with `exception`);
//   - a var change counts for every checked parent open in its process (any thread) with
//     start <= change time <= end; a change is the attribute's value differing from the variable's
//     previous non-NaN value (equal consecutive values are one state, as in the store's histories);
//   - a parent's post or exception post with no counted child is a violation carrying the parent's
//     pre-record (its step is the violation's step); a parent that never closes (incomplete) is never
//     reported, as offline;
//   - lost posts: a post that closes a call below the top of its stack drops the calls above it, which
//     never returned, as the store drops them.
//
// Context managers: the OnlineChecker adds the fields of the managers live at each record
// (check/online/online_context_managers.h), as the store injects those live at the parent's start offline; a
// check fed records directly sees them absent.
//
//   - a VarNameParam child judges a parent call only in a process that has recorded its variable's
//     attribute (a non-NaN value) by the call's post, as offline;
//
// Not done online:
//   - a parent whose post was lost inside a caller that is neither parent nor child is only dropped
//     when an enclosing tracked call closes (until then: one stale entry per lost record, never
//     reported, as offline);
//   - records of different files with equal timestamps are taken in arrival order: a var change
//     stamped exactly at the parent's post time but delivered after it is missed (offline counts it).
#include <algorithm>
#include <limits>

#include "relations/api_contain.h"

namespace traincheck {

namespace {

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

const ApiSignatures& no_signatures() {
  static const ApiSignatures empty;
  return empty;
}

}  // namespace

ApiContainOnlineCheck::ApiContainOnlineCheck(const Invariant& inv, const ApiSignatures* signatures)
    : signatures_(signatures) {
  // An invariant the offline check cannot evaluate (it returns an empty result) is ignored here too.
  if (inv.params.size() < 2 || inv.params[0].type != ParamType::Api) return;
  valid_ = true;
  parent_name_ = inv.params[0].api_full_name;  // a Name: interned
  child_ = inv.params[1];
  if (child_.type == ParamType::Api) {
    child_kind_ = ChildKind::Api;
  } else if ((child_.type == ParamType::VarType || child_.type == ParamType::VarName) &&
             !is_untracked_attribute(child_.attr_name)) {
    // Untracked attributes have no history offline, so they never change; leaving the kind None
    // makes every checked parent a violation, as offline.
    child_kind_ = ChildKind::Var;
    attr_key_ = intern_key(std::string(kAttributeFieldPrefix) + child_.attr_name.str());
  }
  if (const PreconditionGroup* g = inv.precondition_group(ApiContainRelation::kGroup)) precondition_ = *g;
}

bool ApiContainOnlineCheck::precondition_holds(const Record& pre) const {
  return !precondition_ || precondition_->holds_on(pre);
}

void ApiContainOnlineCheck::on_record(const Record& r, std::vector<OnlineViolation>& violations) {
  if (!valid_) return;
  if (r.type == RecordType::StateChange) {
    if (child_kind_ == ChildKind::Var) on_state(r);
    return;
  }
  const bool is_parent = r.function == parent_name_;
  const bool is_child = child_kind_ == ChildKind::Api && r.function == child_.api_full_name;
  if (!is_parent && !is_child) return;
  if (r.type == RecordType::FunctionPre) on_pre(r, is_parent, is_child);
  else on_post(r, violations);
}

void ApiContainOnlineCheck::on_pre(const Record& r, bool is_parent, bool is_child) {
  const bool parent = is_parent && precondition_holds(r) && ApiContainRelation::judges_parent(r);
  const bool child = is_child && ApiContainRelation::api_call_matches(child_, r, signatures_ ? *signatures_ : no_signatures());
  if (!parent && !child) return;  // its post finds no entry and is ignored
  const Value* id = r.get(keys().func_call_id);
  if (id == nullptr) return;  // the reader requires it; nothing could close this call
  OpenCall call;
  call.id = *id;
  call.start = r.time;
  call.parent = parent;
  call.child = child;
  call.first_match = kNever;
  if (parent) call.pre.hold(r, lasting_records_);  // by address when replayed: no copy per call
  threads_[{r.process_id, r.thread_id}].push_back(std::move(call));
}

void ApiContainOnlineCheck::on_post(const Record& r, std::vector<OnlineViolation>& violations) {
  auto thread = threads_.find({r.process_id, r.thread_id});
  if (thread == threads_.end()) return;
  std::vector<OpenCall>& stack = thread->second;
  const Value* id = r.get(keys().func_call_id);
  if (id == nullptr) return;
  size_t depth = stack.size();  // 1 + the position of the closing call
  while (depth > 0 && stack[depth - 1].id != *id) --depth;
  if (depth == 0) return;  // not tracked: precondition failed, arguments differ, or its pre was never seen
  OpenCall& call = stack[depth - 1];
  const int64_t end = r.time;
  if (call.child && ApiContainRelation::api_outcome_matches(child_, r.type == RecordType::FunctionException)) {
    for (size_t i = 0; i + 1 < depth; ++i) {
      OpenCall& outer = stack[i];
      if (outer.parent && outer.start < call.start) outer.first_match = std::min(outer.first_match, end);
    }
  }
  if (call.parent) {
    // API children must end strictly before the parent does; var changes may coincide with its end.
    const bool found = child_kind_ == ChildKind::Api ? call.first_match < end : call.first_match <= end;
    // A VarNameParam judges only calls in processes that have recorded its variable (offline: JudgedCalls).
    if (found || !names_unseen_var(r.process_id)) {
      triggered_ = true;
      if (!found) violations.push_back(OnlineViolation{{*call.pre}});
    }
  }
  stack.resize(depth - 1);  // the calls above it never returned: their posts were lost
  if (stack.empty()) threads_.erase(thread);
}

void ApiContainOnlineCheck::on_state(const Record& r) {
  if (r.var_type != child_.var_type) return;
  if (child_.type == ParamType::VarName && r.var_name != child_.var_name) return;
  const Value* value = state_value(r, attr_key_);
  if (value == nullptr) return;
  const auto [last, first] = last_values_.try_emplace(VarInstanceKey::of(r), *value);
  if (first) return;
  if (!starts_new_state(&last->second, *value)) return;
  const Value before = std::exchange(last->second, *value);
  if (!ApiContainRelation::var_change_matches(child_, r.var_type, r.var_name, child_.attr_name, before, *value)) return;
  // Var changes count in the whole process (the store's contained_var_changes), not only this thread.
  for (auto t = threads_.lower_bound({r.process_id, std::numeric_limits<int64_t>::min()});
       t != threads_.end() && t->first.first == r.process_id; ++t)
    for (OpenCall& call : t->second)
      if (call.parent && call.start <= r.time) call.first_match = std::min(call.first_match, r.time);
}

bool ApiContainOnlineCheck::names_unseen_var(int64_t pid) const {
  if (child_kind_ != ChildKind::Var || child_.type != ParamType::VarName) return false;
  return !last_values_.count(VarInstanceKey{pid, child_.var_name.id(), child_.var_type.id()});
}

OnlineInterest ApiContainOnlineCheck::interest() const {
  OnlineInterest in;
  in.all_records = false;
  if (!valid_) return in;  // never reports anything: needs nothing
  in.functions.push_back(parent_name_.str());
  if (child_kind_ == ChildKind::Api) in.functions.push_back(child_.api_full_name);
  if (child_kind_ == ChildKind::Var) {
    in.var_types.push_back(child_.var_type);
    in.var_attribute = child_.attr_name.str();  // on_state acts on the attribute's changes only
    if (child_.type == ParamType::VarName) in.var_name = child_.var_name.str();  // of that variable only
  }
  return in;
}

size_t ApiContainOnlineCheck::open_calls() const {
  size_t n = 0;
  for (const auto& [thread, stack] : threads_) n += stack.size();
  return n;
}

size_t ApiContainOnlineCheck::tracked_vars() const { return last_values_.size(); }

}  // namespace traincheck
