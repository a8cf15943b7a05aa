// ConsistencyRelation's pairs of one step, judged in time linear in the step ends (docs/README.md
// §Rules of the hot path, rule 7): the offline check (consistency.cpp) and the online one (consistency_online.cpp) both ask an
// index of one side's step ends "how many pairs with this end does the precondition admit, and how many of
// those hold different values", and for the first few of the violating ones, which.
//
// Why it is exact, not an estimate. A precondition of one non-inverted conjunction holds on a pair of
// records iff each record has every clause's property (present, not NaN, hashable unless `exist`; for a
// `constant` clause a listed value), the two agree on every `consistent`/`constant` property (the
// *key*), and differ on every `unequal` property. So the ends are grouped by key (a hash bucket per key:
// the store's var index does the same by value), and within a group the pairs that differ on all k
// unequal properties are counted by inclusion-exclusion over the 2^k subsets of those properties, from
// counts of the group's ends per projection; the pairs that also hold equal values likewise, with the
// value in the projection. Violations are their difference. Values are compared with
// ConsistencyRelation::close_values, which is equality except for floating-point numbers (1e-8): a group
// holding a float, a small group (below kCountedGroupSize) and any precondition that is not one plain
// conjunction (several disjuncts, inverted, context-manager fields enriched offline) are judged pair by
// pair instead, as before; the last is the one case still quadratic in the ends (docs/relations.md).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <unordered_map>
#include <vector>

#include "common/position_table.h"
#include "invariant/precondition.h"
#include "trace/record.h"

namespace traincheck {

// One step end on one param side.
struct PairEnd {
  const Record* record = nullptr;
  const Value* value = nullptr;  // the compared attribute's value at the end of the step
  uint64_t instance = 0;         // an end never pairs with an end of the same instance
  uint32_t record_index = 0;     // offline: the record's index in its TraceStore (for the exact check)
  bool peer = false;             // online: another rank's end; two peers' ends never pair
};

// The invariant's precondition, compiled for grouping.
class PairCondition {
 public:
  using Exact = std::function<bool(const PairEnd&, const PairEnd&)>;
  // `group`: the invariant's "var" group (nullptr: none, every pair is judged). `exact` evaluates it on a
  // pair when it cannot be grouped; `enriched`: the records get context-manager fields from the pair
  // (offline, traces with context managers), so clauses on those fields cannot be grouped.
  // `constants_as_keys`: a constant clause admits any value, as a consistent one does. That is the index
  // shared by conditions of one shape() (they differ only in their constants' listed values): each of
  // them then asks constants_hold of an end's projection. Exact, because the ends of one group agree on
  // every constant property: an end's group admits the end's pairs under a condition iff the end does.
  PairCondition(const PreconditionGroup* group, Exact exact, bool enriched, bool constants_as_keys = false);

  // What an index of this condition groups and filters by, the constants' listed values left out.
  // Empty: not shareable (not groupable, or it holds on no pair).
  std::string shape() const;
  // Whether every constant clause's value in `projection` (admits()' output under a condition of the
  // same shape) is one it lists.
  bool constants_hold(const std::vector<const Value*>& projection) const;

  bool groupable() const { return groupable_; }
  // Groupable only: whether a record can be in any admitted pair, and its key and unequal values
  // (`out` gets key_size() + unequal_size() pointers).
  bool admits(const Record& record, std::vector<const Value*>& out) const;
  size_t key_size() const { return key_.size(); }
  size_t unequal_size() const { return unequal_.size(); }
  // Groupable only: the clauses a pair must differ on (UniformValues), and those it must agree on.
  const std::vector<const Clause*>& unequal_clauses() const { return unequal_; }
  const std::vector<const Clause*>& key_clauses() const { return key_; }
  // A record's value of an `unequal` clause's property as a pair reads it: nullptr when the record can be
  // in no pair (absent, NaN, unhashable).
  static const Value* unequal_value(const Clause& clause, const Record& record);
  bool holds_exactly(const PairEnd& a, const PairEnd& b) const { return exact_(a, b); }

 private:
  bool groupable_ = false;
  bool never_ = false;  // a precondition that holds on no pair (no disjunct)
  bool constants_as_keys_ = false;
  std::vector<const Clause*> filter_, key_, unequal_;
  Exact exact_;
};

// Whether two of a step's ends can differ on some properties (`unequal` clauses' ones). While every end
// that has a property holds one value, a condition that requires a pair to differ on it admits no pair
// of the step, so its index need not be built: one process's own ends under "unequal process_id" (the
// DDP invariant checked in-process on one rank) cost no index at all, whatever the number of invariants.
class UniformValues {
 public:
  explicit UniformValues(size_t properties = 0) : first_(properties), uniform_(properties, true) {}
  // An end's value of property `p` (nullptr: it has none, and so pairs with nothing on it).
  void note(size_t p, const Value* value);
  bool uniform(size_t p) const { return uniform_[p]; }

 private:
  std::vector<std::optional<Value>> first_;
  std::vector<bool> uniform_;
};

struct PairTally {
  uint64_t triggered = 0;   // pairs the precondition admits
  uint64_t violations = 0;  // ... whose values differ
};

// The ends of one side at one step, in the order added (positions 0, 1, ...).
class StepEndIndex {
 public:
  // Groups at least this large are counted by projection; smaller ones are scanned pair by pair.
  static constexpr uint32_t kCountedGroupSize = 24;

  explicit StepEndIndex(const PairCondition& condition) : condition_(&condition) {}
  StepEndIndex(StepEndIndex&&) = default;
  StepEndIndex& operator=(StepEndIndex&&) = default;

  // Room for `ends` ends and `projections` counted projections without growing (an online step expects
  // as many as the step before it had: a counted group's table grown by doubling was rehashed a dozen
  // times a step at 50k parameters).
  void reserve(size_t ends, size_t projections = 0);
  size_t counted_projections() const { return counts_used_; }
  uint32_t add(const PairEnd& end);
  // No longer paired, counted or scanned (the offline sweep over unordered pairs).
  void remove(uint32_t position);
  size_t size() const { return ends_.size(); }
  const PairEnd& at(uint32_t position) const { return ends_[position]; }

  // The pairs of `x` (not in this index, or removed from it) with the ends present. Not const: a large
  // group's counts are built on its first tally that needs them.
  PairTally tally(const PairEnd& x);
  // Calls f(position) for each present end whose pair with `x` is a violation, in position order, at most
  // `limit` times; returns how many.
  size_t violations(const PairEnd& x, size_t limit, const std::function<void(uint32_t)>& f);

 private:
  static constexpr uint32_t kNone = PositionTable::kNone;
  // The ends of one key, as a list through next_in_group_ (positions ascending): no allocation per group.
  struct Group {
    uint32_t first = kNone, last = kNone;
    uint32_t present = 0;
    // Per unequal property (bit j): whether every member added has the first member's value. An end
    // with that value pairs with none of them (one process's own ends under "unequal process_id").
    uint32_t uniform = ~0u;
    bool has_double = false;
    bool counted = false;
  };
  // The group of x (whose projection is in scratch_), or kNone when x pairs with nothing in it for sure.
  uint32_t candidate_group(const PairEnd& x);
  // The ends of one projection (key, some unequal values, perhaps the value): a slot of counts_, an
  // open-addressing table (linear probing, never erased: a removed end only lowers n). Flat, because a
  // step of 50k ends fills it with up to 2^(k+1) projections per end, and a node and a vector per
  // projection cost more than the counting.
  struct Count {
    uint64_t hash = 0;
    uint32_t representative = kNone;  // a position whose projection this counts; kNone: the slot is free
    uint32_t n[2] = {0, 0};           // [local, peer]
  };
  // The slot of the projection, or the free slot where it belongs.
  size_t slot_of(uint64_t hash, const std::vector<const Value*>& projection, const Value* value, uint32_t mask) const;
  // x's key and unequal values (scratch), or false when no pair with x holds.
  bool project(const PairEnd& x, std::vector<const Value*>& out) const;
  uint32_t find_group(const std::vector<const Value*>& projection);
  uint64_t projection_hash(const std::vector<const Value*>& projection, const Value* value, uint32_t mask) const;
  bool same_projection(uint32_t position, const std::vector<const Value*>& projection, const Value* value, uint32_t mask) const;
  // The unequal property j's value of the end at `position`.
  const Value* unequal_of(uint32_t position, size_t j) const;
  void count(uint32_t position, int delta);
  // The ends counted under `hash`, the projection_hash of (projection, value, mask).
  uint64_t counted(uint64_t hash, const std::vector<const Value*>& projection, const Value* value, uint32_t mask,
                   bool peers_too) const;
  // counts_ grown, if need be, so that `more` new projections keep it at most half full.
  void make_room_for_counts(size_t more);
  // hashes_[2 * mask + (0: without the value, 1: with it)] for every subset mask, their slots prefetched.
  void hash_projections(const std::vector<const Value*>& projection, const Value* value);
  // Whether the pair (x, the end at `position`) is admitted, given both are in one group.
  bool admitted(const PairEnd& x, const std::vector<const Value*>& projection, uint32_t position) const;
  bool pairs_with(const PairEnd& x, uint32_t position) const;

  const PairCondition* condition_;
  std::vector<PairEnd> ends_;
  std::vector<const Value*> projections_;  // per end: key_size() + unequal_size() values (groupable)
  std::vector<uint32_t> group_of_;         // per end: its group, kNone when not admitted
  std::vector<uint32_t> next_in_group_;    // per end: the next member of its group, kNone for the last
  std::vector<bool> present_;
  std::vector<Group> groups_;
  PositionTable groups_by_key_;  // key projection hash -> group
  std::vector<Count> counts_;    // projections of counted groups' ends; size 0 or a power of two
  size_t counts_used_ = 0;
  // Per instance its last end, and per end the previous one of its instance (usually none: one end per
  // instance and step), so that the ends an end never pairs with are found without a list per instance.
  PositionTable last_of_instance_;  // instance (its own hash) -> position
  std::vector<uint32_t> previous_of_instance_;
  std::vector<const Value*> scratch_;        // the projection of the end being judged
  std::vector<const Value*> count_scratch_;  // count()'s
  std::vector<uint64_t> hashes_;             // hash_projections()'s
  std::vector<const Value*> add_scratch_;    // add()'s
};

}  // namespace traincheck
