#include "check/online/check_dispatcher.h"

#include <algorithm>
#include <utility>

#include "common/assert.h"
#include "relations/registry.h"

namespace traincheck {

CheckDispatcher::CheckDispatcher(const std::vector<Invariant>& invariants, const ApiSignatures* signatures,
                                 std::vector<OnlineInvariantState>& states, ViolationLog& log,
                                 const std::vector<bool>& skipped)
    : states_(states), log_(log), context_managers_(OnlineContextManagers::named_by(invariants), signatures) {
  TC_ASSERT(states_.size() == invariants.size(), "one state per invariant");
  TC_ASSERT(skipped.empty() || skipped.size() == invariants.size(), "skipped is parallel to the invariants");
  make_checks(invariants, signatures, skipped);
  idle_.assign(checks_.size(), false);
  index_checks();
}

void CheckDispatcher::make_checks(const std::vector<Invariant>& invariants, const ApiSignatures* signatures,
                                  const std::vector<bool>& skipped) {
  std::vector<std::pair<const Relation*, std::vector<size_t>>> by_relation;  // in order of first invariant
  for (size_t i = 0; i < invariants.size(); ++i) {
    OnlineInvariantState& s = states_[i];
    s.invariant = &invariants[i];
    s.relation = find_relation(invariants[i].relation);
    s.display_name = invariant_label(s.relation, invariants[i]);
    if (!s.relation || (!skipped.empty() && skipped[i])) continue;
    auto group = std::find_if(by_relation.begin(), by_relation.end(), [&](const auto& g) { return g.first == s.relation; });
    if (group == by_relation.end()) group = by_relation.insert(by_relation.end(), {s.relation, {}});
    group->second.push_back(i);
  }
  for (const auto& [relation, ids] : by_relation) {
    std::vector<const Invariant*> members;
    for (size_t id : ids) members.push_back(&invariants[id]);
    for (Relation::OnlineCheckOf& made : relation->make_online_checks(members, signatures)) {
      TC_ASSERT(!made.members.empty() && made.members.size() == made.check->members(), "a check's members are its invariants");
      CheckEntry& entry = checks_.emplace_back();
      entry.check = std::move(made.check);
      for (size_t m : made.members) entry.members.push_back(static_cast<uint32_t>(ids.at(m)));
    }
  }
  // Checks in the order of their invariants: records are offered, and violations of one record written,
  // in invariant order, whichever relation shares work between invariants.
  std::sort(checks_.begin(), checks_.end(), [](const CheckEntry& a, const CheckEntry& b) { return a.members[0] < b.members[0]; });
}

void CheckDispatcher::index_checks() {
  by_function_.clear();
  by_var_type_.clear();
  all_records_.clear();
  by_peer_var_type_.clear();
  peer_var_types_.clear();
  peer_fields_.clear();
  peer_checks_.clear();
  bool all_by_digest = true;
  for (size_t c = 0; c < checks_.size(); ++c) {
    const CheckEntry& entry = checks_[c];
    for (size_t m = 0; m < entry.members.size(); ++m) {
      states_[entry.members[m]].check = entry.check.get();
      states_[entry.members[m]].member = static_cast<uint32_t>(m);
    }
    if (idle_[c]) continue;
    const OnlineInterest interest = entry.check->interest();
    const auto id = static_cast<uint32_t>(c);
    if (interest.all_records) all_records_.push_back(id);
    for (const std::string& f : interest.functions) by_function_[f].push_back(id);
    for (const std::string& t : interest.var_types) by_var_type_[t].push_back(id);
    if (interest.peer_step_ends) {
      for (const std::string& t : interest.var_types) by_peer_var_type_[t].push_back(id);
      peer_fields_.insert(interest.peer_fields.begin(), interest.peer_fields.end());
      peer_checks_.push_back(id);
      all_by_digest = all_by_digest && entry.check->judges_peer_steps_by_digest();
    }
  }
  peer_steps_by_digest_ = !peer_checks_.empty() && all_by_digest;
  for (const auto& [type, ids] : by_peer_var_type_) peer_var_types_.push_back(type);
  std::sort(peer_var_types_.begin(), peer_var_types_.end());
  // The context managers' records are wanted too (with no check of their own unless one names them).
  for (const std::string& f : context_managers_.functions()) by_function_.try_emplace(f);
}

size_t CheckDispatcher::assume_one_process() {
  TC_ASSERT(dispatched_ == 0, "a check is idled before its first record, never in the middle of a trace");
  for (size_t c = 0; c < checks_.size(); ++c) {
    if (idle_[c] || !checks_[c].check->needs_other_processes()) continue;
    idle_[c] = true;
    idle_invariants_ += checks_[c].members.size();
  }
  index_checks();
  return idle_invariants_;
}

bool CheckDispatcher::wants(const Record& r) const {
  if (!all_records_.empty()) return true;
  return r.is_api() ? by_function_.find(r.function) != by_function_.end() || is_wanted_exit(r.function)
                    : by_var_type_.find(r.var_type) != by_var_type_.end();
}

void CheckDispatcher::dispatch(const Record& record) {
  ++dispatched_;
  const Record& r = context_managers_.empty() ? record : context_managers_.before(record, enriched_);
  auto offer = [&](const std::vector<uint32_t>& ids) {
    for (uint32_t id : ids) {
      TC_ASSERT(id < checks_.size(), "the tables index checks_");
      checks_[id].check->on_record(r, found_);
      report_found(checks_[id]);
    }
  };
  offer(all_records_);
  // As the checks see it: with its live context managers, which a precondition may name.
  if (peer_state_observer_ && !r.is_api() && by_peer_var_type_.find(r.var_type) != by_peer_var_type_.end())
    peer_state_observer_(r);
  const Table& table = r.is_api() ? by_function_ : by_var_type_;
  auto it = table.find(r.is_api() ? r.function : r.var_type);
  if (it != table.end()) offer(it->second);
  if (!context_managers_.empty()) context_managers_.after(record);
}

void CheckDispatcher::dispatch_peer_step_end(const Record& r) {
  if (r.is_api()) return;
  auto it = by_peer_var_type_.find(r.var_type);
  if (it == by_peer_var_type_.end()) return;
  for (uint32_t id : it->second) {
    checks_[id].check->on_peer_step_end(r, found_);
    report_found(checks_[id]);
  }
}

void CheckDispatcher::dispatch_peer_step_matched(int64_t step, int64_t process_id) {
  for (uint32_t id : peer_checks_) checks_[id].check->on_peer_step_matched(step, process_id);
}

void CheckDispatcher::end_trace() {
  for (CheckEntry& entry : checks_) {
    entry.check->on_trace_end(found_);
    report_found(entry);
  }
}

void CheckDispatcher::records_lost(int64_t process_id, int64_t thread_id) {
  for (CheckEntry& entry : checks_) entry.check->on_records_lost(process_id, thread_id);
}

void CheckDispatcher::report_found(const CheckEntry& entry) {
  for (OnlineViolation& v : found_) {
    TC_ASSERT(v.member < entry.members.size(), "a violation names one of its check's members");
    log_.report(states_[entry.members[v.member]], v);
  }
  found_.clear();
}

}  // namespace traincheck
