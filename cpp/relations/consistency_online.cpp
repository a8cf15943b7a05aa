// ConsistencyRelation, online (docs/analysis.md §Online check): the verdicts of ConsistencyRelation::check,
// from records seen one at a time (delivery contract: OnlineCheck in invariant/relation.h).
//
// Each instance (pid, var_name, var_type) keeps, per param side, the step now running and its last
// record so far. When a record of a later step arrives, the instance's previous step has ended: its end
// (last record, value) is compared with the ends of the same step that other instances already finished,
// and kept for those still to come. So a pair is judged when the second of the two finishes the step,
// on the same records, precondition and values as the offline check (ConsistencyRelation::StepEnd), and
// whatever the delay between ranks: time plays no part.
//
// Invariants that compare the same variables (shared_work_key: the same var type and attribute per side)
// share one check, its members: the instances, their running ends and the ended steps' ends are kept once,
// and the ends are indexed once per precondition shape (SharedIndex in consistency.h): members whose
// preconditions differ only in their constants' values share an index, and each checks its constants on
// the finished end alone. A model's 50k parameters cost one instance lookup and one record copy per
// record, and one index insertion and tally per shape, not per invariant (bench/README.md,
// consistency_scale).
//
// An index of a step is built only once the step has ends it could pair (StepEnds, UniformValues in
// consistency_pairs.h): a precondition that requires a pair to differ on a property admits no pair while
// every end holds one value of it, and two peers' ends never pair. In-process on one rank, the DDP
// invariant's "unequal process_id" keeps every index asleep until a peer's end arrives; peers' ends that
// arrive before this process's own (they are final at once, ours at the next step's first record) are
// kept without an index until then. The index is built from the step's ends so far, and the verdicts
// are the same as if it had been kept up all along.
//
// State, bounded: per instance and side one running end; the ends of the last kKeptSteps ended steps, or
// of more while they number at most kKeptEndsPerProcess per process (an instance lagging further behind is no longer compared;
// a dead rank stops adding ends, never blocks),
// each step's indexed per member by what its precondition compares (consistency_pairs.h), so a finishing
// end costs O(1) amortised per member, not one precondition evaluation per other end of the step.
// Violating pairs are written up to kWrittenPerStep per step and member, in the order their second end
// finished; the rest are counted.
//
// Differs from the offline check: the last step of each instance never ends while training runs, so its
// pairs are compared offline only (the relation cases consistency/three_ranks_online_as_offline and
// lagging_ranks show exactly this difference, and that lagging ranks get the same verdicts). Context
// managers come with the records (OnlineChecker: check/online/online_context_managers.h).
//
// Cross-rank, in-process: the checker of one DDP rank sees its own records, plus the step ends other
// ranks publish through the job's store (check/online/cross_rank_exchange.h), given to on_peer_step_end. A
// peer's end is final when it arrives, so it is finished at once and compared with this process's ends
// of the same step (never with another peer's: that pair is the peers' own to compare). Pairing by step
// is unchanged, so a rank that publishes late is judged as if it had not lagged. A peer's step whose
// digest equalled this process's comes as on_peer_step_matched, without its records, and only to a check
// whose members all pair the ends of one variable name (judges_peer_steps_by_digest): there, every
// end of this process has one twin in the peer's step, with its value, so nothing can differ. The step
// still triggers the members whose pairs would have been admitted, and a peer instance first seen at a
// later step takes its twin's history up to the last matched step (inherit_history).
#include <algorithm>
#include <array>
#include <iterator>
#include <limits>
#include <optional>

#include "common/assert.h"
#include "relations/consistency.h"
#include "trace/key_table.h"

namespace traincheck {

namespace {

// The (type, attribute) of both params, when the invariant compares two tracked variable attributes.
std::optional<std::array<std::pair<std::string, std::string>, 2>> compared_sides(const Invariant& inv) {
  if (inv.params.size() < 2 || inv.params[0].type != ParamType::VarType || inv.params[1].type != ParamType::VarType)
    return std::nullopt;
  std::array<std::pair<std::string, std::string>, 2> sides;
  for (int s = 0; s < 2; ++s) {
    sides[s] = {inv.params[s].var_type, inv.params[s].attr_name};
    // Untracked attributes have no history offline, so nothing is ever compared.
    if (is_untracked_attribute(sides[s].second)) return std::nullopt;
  }
  return sides;
}

}  // namespace

std::string ConsistencyOnlineCheck::shared_work_key(const Invariant& inv) {
  const auto sides = compared_sides(inv);
  if (!sides) return {};
  std::string key;
  for (const auto& [type, attr] : *sides) {  // lengths first: names may hold any byte
    key += std::to_string(type.size()) + ":" + type + std::to_string(attr.size()) + ":" + attr;
  }
  return key;
}

ConsistencyOnlineCheck::ConsistencyOnlineCheck(const std::vector<const Invariant*>& invariants) {
  TC_ASSERT(!invariants.empty(), "a check judges at least one invariant");
  const std::string key = shared_work_key(*invariants.front());
  for (const Invariant* inv : invariants) {
    TC_ASSERT(shared_work_key(*inv) == key, "the members of a check compare the same variables");
    auto& m = *members_.emplace_back(std::make_unique<Member>());
    if (const PreconditionGroup* g = inv->precondition_group(ConsistencyRelation::kGroup)) m.precondition = *g;
    // Records online carry their live context managers, so every clause reads the record alone.
    const PreconditionGroup* pre = m.precondition ? &*m.precondition : nullptr;
    m.condition = std::make_unique<PairCondition>(
        pre, [pre](const PairEnd& a, const PairEnd& b) { return !pre || pre->holds_on(*a.record, *b.record); }, false);
    m.twins_admitted_alone = std::all_of(m.condition->unequal_clauses().begin(), m.condition->unequal_clauses().end(),
                                         [](const Clause* c) { return c->additional_path.is_null() && is_rank_identity_key(c->prop_name); });
  }
  share_indexes();
  const auto sides = compared_sides(*invariants.front());
  if (!sides) return;
  for (int s = 0; s < 2; ++s) {
    type_[s] = (*sides)[s].first;
    attr_[s] = (*sides)[s].second;
    key_[s] = intern_key(std::string(kAttributeFieldPrefix) + attr_[s]);
    skip_initial_[s] = ConsistencyRelation::skips_initial_state(type_[s]);
  }
  valid_ = true;
  symmetric_ = type_[0] == type_[1] && attr_[0] == attr_[1];
}

void ConsistencyOnlineCheck::share_indexes() {
  std::map<std::string, uint32_t> by_shape;
  for (size_t m = 0; m < members_.size(); ++m) {
    Member& member = *members_[m];
    const std::string shape = member.condition->shape();
    auto found = shape.empty() ? by_shape.end() : by_shape.find(shape);
    if (found == by_shape.end()) {
      SharedIndex& shared = indexes_.emplace_back();
      if (shape.empty()) {
        shared.condition = member.condition.get();
      } else {
        const PreconditionGroup* pre = member.precondition ? &*member.precondition : nullptr;
        shared.relaxed = std::make_unique<PairCondition>(pre, PairCondition::Exact{}, false, true);
        shared.condition = shared.relaxed.get();
        found = by_shape.emplace(shape, static_cast<uint32_t>(indexes_.size() - 1)).first;
      }
    }
    member.index = shape.empty() ? static_cast<uint32_t>(indexes_.size() - 1) : found->second;
    member.filters_constants = !shape.empty();
    indexes_[member.index].members.push_back(static_cast<uint32_t>(m));
  }
  // The properties whose one value over a step's ends keeps indexes asleep, each followed once.
  std::map<std::string, uint32_t> guard_of;
  for (SharedIndex& shared : indexes_) {
    if (!shared.condition->groupable()) continue;
    for (const Clause* c : shared.condition->unequal_clauses()) {
      const auto [it, added] = guard_of.try_emplace(c->prop_name + '\0' + to_json(c->additional_path),
                                                    static_cast<uint32_t>(guards_.size()));
      if (added) guards_.push_back(c);
      shared.guards.push_back(it->second);
    }
  }
}

bool ConsistencyOnlineCheck::asleep(const SharedIndex& shared, const StepEnds& step) const {
  return step.local_ends == 0 ||
         std::any_of(shared.guards.begin(), shared.guards.end(), [&](uint32_t g) { return step.uniform.uniform(g); });
}

StepEndIndex& ConsistencyOnlineCheck::index_of(int side, int64_t step, StepEnds& ends, size_t i) {
  std::optional<StepEndIndex>& index = ends.index[i];
  if (index) return *index;
  index.emplace(*indexes_[i].condition);
  // Room for as many ends as the step before had (a model's step ends tens of thousands of instances):
  // growing to that size costs more than filling it.
  const auto it = ended_[side].find(step);
  size_t before = 0, projections_before = 0;
  if (it != ended_[side].begin()) {
    const StepEnds& previous = std::prev(it)->second;
    before = previous.ends.size();
    if (previous.index[i]) projections_before = previous.index[i]->counted_projections();
  }
  index->reserve(std::max(before, ends.ends.size()), projections_before);
  for (const End& e : ends.ends) index->add(pair_end(e));
  return *index;
}

bool ConsistencyOnlineCheck::triggered() const {
  return std::any_of(members_.begin(), members_.end(), [](const auto& m) { return m->triggered; });
}

ConsistencyOnlineCheck::Instance& ConsistencyOnlineCheck::instance_of(const Record& r) {
  const VarInstanceKey key = VarInstanceKey::of(r);
  // The one found after the last one found, the last time: at 50k parameters, hashing into the map
  // missed the cache once per record.
  if (last_found_ && last_found_->next_found && last_found_->next_found->key == key) {
    last_found_ = last_found_->next_found;
    return *last_found_;
  }
  auto [it, added] = instances_.try_emplace(key);
  Instance& found = it->second;
  if (added) {
    found.process_id = r.process_id;
    found.var_name = r.var_name;
    found.key = key;
    if (std::find(processes_.begin(), processes_.end(), r.process_id) == processes_.end()) processes_.push_back(r.process_id);
  }
  if (last_found_) last_found_->next_found = &found;
  last_found_ = &found;
  return found;
}

bool ConsistencyOnlineCheck::update(Instance& inst, int side, const Record& r, int64_t step) {
  const Value* value = state_value(r, key_[side]);
  if (value == nullptr) return false;
  if (inst.value[side] && starts_new_state(&*inst.value[side], *value) && !inst.changed[side]) {  // the first change
    inst.changed[side] = true;
    inst.changed_at[side] = step;
  }
  if (!inst.first_value[side]) inst.first_value[side] = *value;
  inst.value[side] = *value;
  inst.latest_step[side] = step;
  const bool compared = !(skip_initial_[side] && !inst.changed[side]);
  // The step's running end moves on in place, or starts in the storage of the instance's pruned end
  // (prune): either way its record's fields are assigned into storage already allocated, over the same
  // variable's.
  if (!inst.current[side]) {
    inst.current[side].swap(inst.spare[side]);
    if (!inst.current[side]) inst.current[side].emplace();
  }
  End& e = *inst.current[side];
  e.step = step;
  e.record = r;
  e.value = *value;
  e.compared = compared;
  e.instance = &inst;
  return true;
}

void ConsistencyOnlineCheck::on_record(const Record& r, std::vector<OnlineViolation>& violations) {
  if (!valid_ || r.type != RecordType::StateChange) return;
  if (!local_process_) local_process_ = r.process_id;
  const int64_t step = ConsistencyRelation::step_of(r);
  for (int side = 0; side < (symmetric_ ? 1 : 2); ++side) {
    if (r.var_type != type_[side] || state_value(r, key_[side]) == nullptr) continue;
    Instance& inst = instance_of(r);
    const bool step_ended = inst.current[side] && inst.current[side]->step != step;
    if (step_ended) finish_step(inst, side, violations);
    update(inst, side, r, step);
    if (step_ended) prune();  // with this instance's new step known
  }
}

void ConsistencyOnlineCheck::on_peer_step_end(const Record& r, std::vector<OnlineViolation>& violations) {
  if (!valid_ || r.type != RecordType::StateChange) return;
  const int64_t step = ConsistencyRelation::step_of(r);
  for (int side = 0; side < (symmetric_ ? 1 : 2); ++side) {
    if (r.var_type != type_[side]) continue;
    Instance& inst = instance_of(r);
    inst.peer = true;
    inherit_history(inst, side, r, step);
    if (!update(inst, side, r, step)) continue;
    finish_step(inst, side, violations);
    prune();
  }
}

bool ConsistencyOnlineCheck::judges_peer_steps_by_digest() const {
  if (!valid_ || !symmetric_) return false;
  return std::all_of(members_.begin(), members_.end(), [](const std::unique_ptr<Member>& m) {
    const PairCondition& c = *m->condition;
    return c.groupable() && std::any_of(c.key_clauses().begin(), c.key_clauses().end(), [](const Clause* k) {
             return k->prop_name == "var_name" && k->additional_path.is_null();
           });
  });
}

void ConsistencyOnlineCheck::on_peer_step_matched(int64_t step, int64_t process_id) {
  if (!valid_) return;
  auto [last, fresh] = last_matched_step_.try_emplace(process_id, step);
  if (!fresh) last->second = std::max(last->second, step);
  matched_steps_.insert(step);
  // This process's ends of the step that have ended; those still running are judged when they end
  // (finish_step).
  if (auto ended = ended_[0].find(step); ended != ended_[0].end())
    for (const End& e : ended->second.ends)
      if (!e.instance->peer && !trigger_by_twin(e)) break;
}

bool ConsistencyOnlineCheck::trigger_by_twin(const End& end) {
  // The twin's pair is admitted where this process's end alone is, when the pair's unequal properties
  // differ by rank only; otherwise whether it would have been is not known, and the member is left as it
  // is. True while some member is still not triggered.
  bool pending = false;
  for (const std::unique_ptr<Member>& m : members_) {
    if (m->triggered || !m->twins_admitted_alone) continue;
    if (end.compared && m->condition->admits(end.record, projection_)) m->triggered = true;
    else pending = true;
  }
  return pending;
}

void ConsistencyOnlineCheck::inherit_history(Instance& peer, int side, const Record& r, int64_t step) {
  if (last_matched_step_.empty() || peer.changed[side]) return;
  auto matched = last_matched_step_.find(r.process_id);
  if (matched == last_matched_step_.end() || matched->second >= step || !local_process_) return;
  // Seen before (a step fetched, then matched ones): its history stops at its last end seen; only steps
  // matched since then are the twin's to tell.
  if (peer.value[side] && peer.latest_step[side] >= matched->second) return;
  VarInstanceKey key = VarInstanceKey::of(r);
  key.process_id = *local_process_;
  auto twin = instances_.find(key);
  if (twin == instances_.end() || !twin->second.first_value[side]) return;
  // Up to the last matched step the peer's values were the twin's: changed by then if the twin's were,
  // else still the twin's first value, against which this record's value is a change or not.
  const Instance& t = twin->second;
  if (t.changed_at[side] <= matched->second) {
    peer.changed[side] = true;
    peer.changed_at[side] = t.changed_at[side];
  } else if (!peer.value[side]) {
    peer.value[side] = *t.first_value[side];
  }
  if (!peer.first_value[side]) peer.first_value[side] = *t.first_value[side];
}

bool ConsistencyOnlineCheck::needs_other_processes() const {
  auto separates_processes = [](const Conjunction& c) {
    return !c.unconditional && std::any_of(c.clauses.begin(), c.clauses.end(), [](const Clause& clause) {
             return clause.type == ClauseType::Unequal && clause.prop_name == "process_id" && clause.additional_path.is_null();
           });
  };
  return valid_ && std::all_of(members_.begin(), members_.end(), [&](const auto& m) {
           return m->precondition && !m->precondition->inverted &&
                  std::all_of(m->precondition->disjuncts.begin(), m->precondition->disjuncts.end(), separates_processes);
         });
}

PairEnd ConsistencyOnlineCheck::pair_end(const End& e) {
  return PairEnd{&e.record, &e.value, reinterpret_cast<uintptr_t>(e.instance), 0, e.instance->peer};
}

ConsistencyOnlineCheck::StepEnds& ConsistencyOnlineCheck::ended_at(int side, int64_t step) {
  auto [it, added] = ended_[side].try_emplace(step, end_blocks_);
  if (added) {
    StepEnds& ends = it->second;
    ends.index.resize(indexes_.size());
    ends.written.assign(members_.size(), 0);
    ends.uniform = UniformValues(guards_.size());
  }
  return it->second;
}

void ConsistencyOnlineCheck::finish_step(Instance& inst, int side, std::vector<OnlineViolation>& violations) {
  End done = std::move(*inst.current[side]);
  inst.current[side].reset();
  latest_ended_ = std::max(latest_ended_, done.step);
  if (!done.compared) return;  // never paired: not kept
  const int other_side = symmetric_ ? 0 : 1 - side;
  // The other ends of this step that already ended: counted by group (consistency_pairs.h), and per
  // member the first kWrittenPerStep violating pairs of the step written, in the order those ends ended.
  const PairEnd mine = pair_end(done);
  StepEnds& step = ended_at(0, done.step);  // holds the written counts and the guards
  for (size_t g = 0; g < guards_.size(); ++g) step.uniform.note(g, PairCondition::unequal_value(*guards_[g], done.record));
  if (!inst.peer) ++step.local_ends;
  if (!inst.peer && matched_steps_.count(done.step)) trigger_by_twin(done);  // a peer's step matched by digest
  if (auto it = ended_[other_side].find(done.step); it != ended_[other_side].end()) {
    StepEnds& others = it->second;
    for (size_t i = 0; i < indexes_.size(); ++i) {
      const SharedIndex& shared = indexes_[i];
      if (asleep(shared, step)) continue;  // no pair of this step admitted yet, mine's included
      // A shared index's group of `mine` holds only ends with mine's constants' values, so a member that
      // admits mine's values admits every pair of it: one tally for all of them.
      if (shared.relaxed && !shared.condition->admits(*mine.record, projection_)) continue;
      StepEndIndex& index = index_of(other_side, done.step, others, i);
      std::optional<PairTally> tally;
      for (const uint32_t member : shared.members) {
        Member& m = *members_[member];
        if (m.filters_constants && !m.condition->constants_hold(projection_)) continue;
        if (!tally) tally = index.tally(mine);
        if (tally->triggered > 0) m.triggered = true;
        if (tally->violations == 0) continue;
        report_pairs(inst, side, done, index, others, tally->violations, member, step.written[member], violations);
      }
    }
  }
  StepEnds& mine_ended = ended_at(side, done.step);
  awake_.clear();  // built before `done` is kept, which each then adds
  for (size_t i = 0; i < indexes_.size(); ++i)
    if (!asleep(indexes_[i], step)) awake_.push_back(&index_of(side, done.step, mine_ended, i));
  mine_ended.ends.push_back(std::move(done));
  ++kept_ends_;
  const PairEnd kept = pair_end(mine_ended.ends.back());
  for (StepEndIndex* index : awake_) index->add(kept);
}

void ConsistencyOnlineCheck::report_pairs(const Instance& inst, int side, const End& done, StepEndIndex& index,
                                          const StepEnds& others, uint64_t violating, uint32_t member,
                                          uint64_t& written, std::vector<OnlineViolation>& violations) const {
  const size_t room = written < kWrittenPerStep ? kWrittenPerStep - written : 0;
  const size_t shown = index.violations(pair_end(done), room, [&](uint32_t pos) {
    const End& other = others.ends[pos];
    bool mine_first = side == 0;
    if (symmetric_)
      mine_first = ConsistencyRelation::first_of_pair(inst.process_id, inst.var_name, other.instance->process_id,
                                                      other.instance->var_name);
    violations.push_back(OnlineViolation{mine_first ? std::vector<Record>{done.record, other.record}
                                                    : std::vector<Record>{other.record, done.record},
                                         0, 0, member});
  });
  written += shown;
  if (violating > shown) violations.push_back(OnlineViolation{{}, violating - shown, done.step, member});
}

void ConsistencyOnlineCheck::prune() {
  // Ends of the last kKeptSteps ended steps are kept, whoever has passed them, and of older steps while
  // the kept ends number at most kept_ends_limit(): a rank that lags, or whose first records arrive late, is still
  // compared within that window (no instance can tell whether another, not yet seen, will come). The
  // oldest step goes first, on both sides.
  while (kept_ends_ > kept_ends_limit()) {
    int64_t oldest = std::numeric_limits<int64_t>::max();
    for (const auto& per_side : ended_)
      if (!per_side.empty()) oldest = std::min(oldest, per_side.begin()->first);
    if (oldest == std::numeric_limits<int64_t>::max() || oldest > latest_ended_ - kKeptSteps) break;
    for (auto& per_side : ended_)
      if (auto it = per_side.find(oldest); it != per_side.end()) {
        StepEnds& step = it->second;
        kept_ends_ -= step.ends.size();
        // Each end's storage goes back to its instance, for its next running end (update): a model's step
        // ends 50k parameters, and each new end's record would otherwise be allocated as the pruned one's
        // is freed, or copied over another variable's record (its shared fields' reference count in
        // another cache line).
        step.index.clear();  // its pointers into the ends go first
        const int side = static_cast<int>(&per_side - ended_);
        for (End& e : step.ends)
          if (!e.instance->spare[side]) e.instance->spare[side] = std::move(e);
        per_side.erase(it);
      }
    matched_steps_.erase(matched_steps_.begin(), matched_steps_.upper_bound(oldest));
  }
}

OnlineInterest ConsistencyOnlineCheck::interest() const {
  OnlineInterest in;
  in.all_records = false;
  if (!valid_) return in;
  in.var_types.push_back(type_[0]);
  if (type_[1] != type_[0]) in.var_types.push_back(type_[1]);
  in.peer_step_ends = true;
  for (int s = 0; s < 2; ++s) in.peer_fields.push_back(std::string(kAttributeFieldPrefix) + attr_[s]);
  for (const auto& m : members_)
    if (m->precondition)
      for (const Conjunction& c : m->precondition->disjuncts)
        for (const Clause& clause : c.clauses) in.peer_fields.push_back(clause.prop_name);
  return in;
}

size_t ConsistencyOnlineCheck::tracked_states() const {
  size_t n = 0;
  for (const auto& [key, inst] : instances_)
    for (int s = 0; s < 2; ++s) n += inst.current[s] ? 1 : 0;
  for (const auto& per_side : ended_)
    for (const auto& [step, ends] : per_side) n += ends.ends.size();
  return n;
}

size_t ConsistencyOnlineCheck::built_indexes() const {
  size_t n = 0;
  for (const auto& per_side : ended_)
    for (const auto& [step, ends] : per_side)
      n += static_cast<size_t>(std::count_if(ends.index.begin(), ends.index.end(), [](const auto& i) { return i.has_value(); }));
  return n;
}

}  // namespace traincheck
