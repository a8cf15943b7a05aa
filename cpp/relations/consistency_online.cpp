// ConsistencyRelation, online (compat §8.2 "Online", §10): the verdicts of ConsistencyRelation::check,
// from records seen one at a time (delivery contract: OnlineCheck in invariant/relation.h).
//
// A state of an instance (pid, var_name, var_type) for a param's attribute begins at a record whose
// value differs from the instance's previous non-NaN value and ends at the next such record, as in the
// store's histories. A pair of states of different instances is compared once, when the later of the
// two ends: its liveness is then known, so the 1% overlap test, the precondition ("var", on the two
// states' first records), the skipped initial states and the 1e-8 tolerance are exactly the offline
// check's (and inference's), and so is the record order of a violation.
// Each pair is evaluated once, so no de-duplication by record hash (the original's) is needed.
//
// State, bounded: per instance and param side, the open state (value, start, a copy of its first
// record) and the ended states that may still meet another instance's open state. An ended state c is
// dropped when no open state of another instance began before c ended (later states begin later
// still), or when c is too short to reach 1% overlap with anything still open: any pair closing from
// now on has a union of at least now - c.start and an intersection of at most c.end - c.start. With
// ranks in lockstep this keeps about one ended state per instance; an instance that never changes
// (a frozen parameter) makes the others keep their states for up to 100 times their length.
//
// Differs from the offline check: the last state of each instance never ends while training runs, so
// pairs involving one are not compared online (offline they end at the trace end and are). Context
// managers come with the records (OnlineChecker: check/online_context_managers.h); the precondition sees
// those live at each pair's first records, where offline it sees those live at the earlier of the two. The in-process checker of one DDP rank sees only that rank's records: it finds
// pairs of that process's instances only; cross-rank checking needs traincheck-onlinecheck on the
// shared trace folder.
#include <algorithm>
#include <limits>

#include "relations/consistency.h"

namespace traincheck {

namespace {
constexpr std::string_view kGroup = "var";
}

ConsistencyOnlineCheck::ConsistencyOnlineCheck(const Invariant& inv) {
  if (inv.params.size() < 2 || inv.params[0].type != ParamType::VarType || inv.params[1].type != ParamType::VarType) return;
  for (int s = 0; s < 2; ++s) {
    type_[s] = inv.params[s].var_type;
    attr_[s] = inv.params[s].attr_name;
    // Untracked attributes have no history offline, so nothing is ever compared.
    if (is_untracked_attribute(attr_[s])) return;
    key_[s] = intern_key("attributes." + attr_[s]);
    skip_initial_[s] = ConsistencyRelation::skips_initial_state(type_[s]);
  }
  valid_ = true;
  symmetric_ = type_[0] == type_[1] && attr_[0] == attr_[1];
  if (inv.precondition)
    if (const PreconditionGroup* g = inv.precondition->find(kGroup)) precondition_ = *g;
}

void ConsistencyOnlineCheck::on_record(const Record& r, std::vector<OnlineViolation>& violations) {
  if (!valid_ || r.type != RecordType::StateChange) return;
  for (int side = 0; side < (symmetric_ ? 1 : 2); ++side) {
    if (r.var_type != type_[side]) continue;
    const Value* value = r.get(key_[side]);
    if (value == nullptr || value->is_nan()) continue;  // NaN values form no state (as in the store)
    Instance& inst = instances_[InstanceKey{r.process_id, std::string(r.var_name), std::string(r.var_type)}];
    if (inst.var_name.empty()) {
      inst.process_id = r.process_id;
      inst.var_name = std::string(r.var_name);
    }
    std::optional<State>& open = inst.open[side];
    if (open && open->value == *value) continue;
    const bool initial = !open && !inst.seen[side];
    if (open) close_state(inst, side, r.time, violations);
    open = State{*value, r.time, 0, r, initial && skip_initial_[side]};
    inst.seen[side] = true;
  }
}

void ConsistencyOnlineCheck::close_state(Instance& inst, int side, int64_t now, std::vector<OnlineViolation>& violations) {
  prune(now);  // while the closing state still counts as open: states it meets are kept
  State closing = std::move(*inst.open[side]);
  inst.open[side].reset();
  closing.end = now;
  if (closing.initial) return;  // never a pair's member, as offline and in inference
  const int other_side = symmetric_ ? 0 : 1 - side;
  for (const auto& [key, other] : instances_) {
    if (&other == &inst) continue;
    for (const State& s : other.closed[other_side])
      if (ConsistencyRelation::overlaps(closing.start, closing.end, s.start, s.end))
        compare(closing, inst, side, s, other, violations);
  }
  inst.closed[side].push_back(std::move(closing));
}

void ConsistencyOnlineCheck::compare(const State& closing, const Instance& inst, int side, const State& other,
                                     const Instance& other_inst, std::vector<OnlineViolation>& violations) {
  // Record order as offline: params' order, or (one param twice) the earlier-ending state first, ties
  // by process, then name.
  bool closing_first = side == 0;
  if (symmetric_)
    closing_first = std::tie(closing.end, inst.process_id, inst.var_name) <
                    std::tie(other.end, other_inst.process_id, other_inst.var_name);
  const State& a = closing_first ? closing : other;
  const State& b = closing_first ? other : closing;
  if (precondition_) {
    const RecordView views[2] = {RecordView{&a.first, nullptr}, RecordView{&b.first, nullptr}};
    if (!precondition_->holds(views)) return;
  }
  triggered_ = true;
  if (!ConsistencyRelation::close_values(a.value, b.value)) violations.push_back(OnlineViolation{{a.first, b.first}});
}

void ConsistencyOnlineCheck::prune(int64_t now) {
  // Per side: the earliest start of an open state a closed state of that side could still pair with.
  int64_t earliest_open[2] = {std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::max()};
  for (const auto& [key, inst] : instances_)
    for (int s = 0; s < 2; ++s)
      if (inst.open[s]) {
        const int partner = symmetric_ ? 0 : 1 - s;
        earliest_open[partner] = std::min(earliest_open[partner], inst.open[s]->start);
      }
  for (auto& [key, inst] : instances_)
    for (int s = 0; s < 2; ++s)
      std::erase_if(inst.closed[s], [&](const State& c) {
        return earliest_open[s] >= c.end ||
               static_cast<double>(c.end - c.start) <= 0.01 * static_cast<double>(now - c.start);
      });
}

OnlineInterest ConsistencyOnlineCheck::interest() const {
  OnlineInterest in;
  in.all_records = false;
  if (!valid_) return in;
  in.var_types.push_back(type_[0]);
  if (type_[1] != type_[0]) in.var_types.push_back(type_[1]);
  return in;
}

size_t ConsistencyOnlineCheck::tracked_states() const {
  size_t n = 0;
  for (const auto& [key, inst] : instances_)
    for (int s = 0; s < 2; ++s) n += inst.closed[s].size() + (inst.open[s] ? 1 : 0);
  return n;
}

}  // namespace traincheck
