#include "relations/consistency_pairs.h"

#include <bit>

#include "relations/consistency.h"
#include "trace/trace_store.h"

namespace traincheck {

namespace {

uint64_t mix(uint64_t h, uint64_t x) {
  h ^= x + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
  h = (h ^ (h >> 31)) * 0xBF58476D1CE4E5B9ULL;
  return h ^ (h >> 29);
}

bool listed(const Clause& c, const Value& v) {
  return std::any_of(c.values.begin(), c.values.end(), [&](const Value& x) { return x == v; });
}

// What Clause::holds asks of each record alone (its property present, not NaN, hashable unless `exist`,
// a listed value for `constant` unless `any_constant`).
const Value* admitted_value(const Clause& c, const Record& r, bool any_constant) {
  const Value* v = c.lookup(RecordView{&r, nullptr});
  if (v == nullptr || v->is_nan()) return nullptr;
  if (c.type != ClauseType::Exist && !v->is_hashable()) return nullptr;
  if (c.type == ClauseType::Constant && !any_constant && !listed(c, *v)) return nullptr;
  return v;
}

}  // namespace

PairCondition::PairCondition(const PreconditionGroup* group, Exact exact, bool enriched, bool constants_as_keys)
    : constants_as_keys_(constants_as_keys), exact_(std::move(exact)) {
  if (group == nullptr) {
    groupable_ = true;
    return;
  }
  if (group->disjuncts.empty()) {  // an empty OR: never; inverted, always
    groupable_ = true;
    never_ = !group->inverted;
    return;
  }
  if (group->inverted || group->disjuncts.size() != 1) return;
  const Conjunction& c = group->disjuncts[0];
  if (c.unconditional) {
    groupable_ = true;
    return;
  }
  for (const Clause& clause : c.clauses) {
    // Offline, a context manager's field comes from the pair's earliest record, not from each record.
    if (enriched && clause.prop_name.starts_with(kContextManagerFieldPrefix)) return;
    filter_.push_back(&clause);
    if (clause.type == ClauseType::Consistent || clause.type == ClauseType::Constant) key_.push_back(&clause);
    if (clause.type == ClauseType::Unequal) unequal_.push_back(&clause);
  }
  // 2^k counts per end: a precondition with many unequal clauses is judged pair by pair.
  groupable_ = unequal_.size() <= 6;
}

const Value* PairCondition::unequal_value(const Clause& clause, const Record& record) {
  return admitted_value(clause, record, false);
}

void UniformValues::note(size_t p, const Value* value) {
  if (value == nullptr || !uniform_[p]) return;
  if (!first_[p]) {
    first_[p] = *value;
  } else if (!(*value == *first_[p])) {
    uniform_[p] = false;
    first_[p].reset();
  }
}

bool PairCondition::admits(const Record& r, std::vector<const Value*>& out) const {
  out.clear();
  if (never_) return false;
  for (const Clause* c : filter_)
    if (admitted_value(*c, r, constants_as_keys_) == nullptr) return false;
  for (const Clause* c : key_) out.push_back(admitted_value(*c, r, constants_as_keys_));
  for (const Clause* c : unequal_) out.push_back(admitted_value(*c, r, constants_as_keys_));
  return true;
}

std::string PairCondition::shape() const {
  if (!groupable_ || never_) return {};
  std::string shape = "shape:";  // never empty when shareable, even with no clause
  for (const Clause* c : filter_) {
    // Constant and consistent clauses both group by their value; how each is read must match.
    shape += c->type == ClauseType::Exist ? 'E' : c->type == ClauseType::Unequal ? 'U' : 'K';
    const std::string path = to_json(c->additional_path);
    shape += std::to_string(c->prop_name.size()) + ":" + c->prop_name + std::to_string(path.size()) + ":" + path;
  }
  return shape;
}

bool PairCondition::constants_hold(const std::vector<const Value*>& projection) const {
  for (size_t i = 0; i < key_.size(); ++i)
    if (key_[i]->type == ClauseType::Constant && !listed(*key_[i], *projection[i])) return false;
  return true;
}

bool StepEndIndex::project(const PairEnd& x, std::vector<const Value*>& out) const {
  if (!condition_->groupable()) {
    out.clear();
    return true;
  }
  return condition_->admits(*x.record, out);
}

uint64_t StepEndIndex::projection_hash(const std::vector<const Value*>& p, const Value* value, uint32_t mask) const {
  const size_t nk = condition_->key_size();
  uint64_t h = mix(0x636F6E73ULL, mask | (value ? 0x80000000u : 0u));
  for (size_t i = 0; i < nk; ++i) h = mix(h, p[i]->hash());
  for (size_t j = 0; j < condition_->unequal_size(); ++j)
    if (mask & (1u << j)) h = mix(h, p[nk + j]->hash());
  if (value) h = mix(h, value->hash());
  return h;
}

bool StepEndIndex::same_projection(uint32_t pos, const std::vector<const Value*>& p, const Value* value, uint32_t mask) const {
  const size_t nk = condition_->key_size(), width = nk + condition_->unequal_size();
  const Value* const* q = projections_.data() + static_cast<size_t>(pos) * width;
  for (size_t i = 0; i < nk; ++i)
    if (!(*q[i] == *p[i])) return false;
  for (size_t j = 0; j < condition_->unequal_size(); ++j)
    if ((mask & (1u << j)) && !(*q[nk + j] == *p[nk + j])) return false;
  return value == nullptr || *ends_[pos].value == *value;
}

uint32_t StepEndIndex::find_group(const std::vector<const Value*>& p) {
  if (!condition_->groupable()) return groups_.empty() ? kNone : 0;
  const uint32_t* g = groups_by_key_.find(projection_hash(p, nullptr, 0),
                                          [&](uint32_t group) { return same_projection(groups_[group].first, p, nullptr, 0); });
  return g ? *g : kNone;
}

const Value* StepEndIndex::unequal_of(uint32_t pos, size_t j) const {
  const size_t nk = condition_->key_size(), width = nk + condition_->unequal_size();
  return projections_[static_cast<size_t>(pos) * width + nk + j];
}

size_t StepEndIndex::slot_of(uint64_t hash, const std::vector<const Value*>& p, const Value* value, uint32_t mask) const {
  const size_t wrap = counts_.size() - 1;
  for (size_t i = hash & wrap;; i = (i + 1) & wrap) {
    const Count& c = counts_[i];
    if (c.representative == kNone || (c.hash == hash && same_projection(c.representative, p, value, mask))) return i;
  }
}

void StepEndIndex::make_room_for_counts(size_t more) {
  if (2 * (counts_used_ + more) <= counts_.size()) return;  // at most half full: probes stay short
  size_t size = std::max<size_t>(64, 2 * counts_.size());
  while (2 * (counts_used_ + more) > size) size *= 2;
  std::vector<Count> old(size);
  old.swap(counts_);
  for (const Count& c : old)
    if (c.representative != kNone)
      for (size_t i = c.hash & (counts_.size() - 1);; i = (i + 1) & (counts_.size() - 1))
        if (counts_[i].representative == kNone) {
          counts_[i] = c;
          break;
        }
}

void StepEndIndex::hash_projections(const std::vector<const Value*>& p, const Value* value) {
  // Every subset's two projections (without and with the value) hashed first and their slots fetched
  // together: one at a time, each waited for its cache miss (a model's counted groups are megabytes).
  const uint32_t masks = 1u << condition_->unequal_size();
  hashes_.resize(2 * static_cast<size_t>(masks));
  const size_t wrap = counts_.size() - 1;
  for (uint32_t mask = 0; mask < masks; ++mask)
    for (int with_value = 0; with_value < 2; ++with_value) {
      const uint64_t h = projection_hash(p, with_value ? value : nullptr, mask);
      hashes_[2 * mask + static_cast<size_t>(with_value)] = h;
      if (!counts_.empty()) __builtin_prefetch(&counts_[h & wrap]);
    }
}

void StepEndIndex::count(uint32_t pos, int delta) {
  const size_t width = condition_->key_size() + condition_->unequal_size();
  std::vector<const Value*>& p = count_scratch_;
  p.assign(projections_.begin() + static_cast<std::ptrdiff_t>(pos * width), projections_.begin() + static_cast<std::ptrdiff_t>((pos + 1) * width));
  const PairEnd& e = ends_[pos];
  const uint32_t masks = 1u << condition_->unequal_size();
  make_room_for_counts(2 * static_cast<size_t>(masks));
  hash_projections(p, e.value);
  for (uint32_t mask = 0; mask < masks; ++mask)
    for (int with_value = 0; with_value < 2; ++with_value) {
      const Value* value = with_value ? e.value : nullptr;
      const uint64_t hash = hashes_[2 * mask + static_cast<size_t>(with_value)];
      Count& c = counts_[slot_of(hash, p, value, mask)];
      if (c.representative == kNone) {
        c = Count{hash, pos};
        ++counts_used_;
      }
      c.n[e.peer ? 1 : 0] += static_cast<uint32_t>(delta);  // wraps back on removal
    }
}

uint64_t StepEndIndex::counted(uint64_t hash, const std::vector<const Value*>& p, const Value* value, uint32_t mask,
                               bool peers_too) const {
  if (counts_.empty()) return 0;
  const Count& c = counts_[slot_of(hash, p, value, mask)];
  return c.representative == kNone ? 0 : c.n[0] + (peers_too ? c.n[1] : 0);
}

void StepEndIndex::reserve(size_t ends, size_t projections) {
  make_room_for_counts(projections);
  ends_.reserve(ends);
  present_.reserve(ends);
  previous_of_instance_.reserve(ends);
  group_of_.reserve(ends);
  next_in_group_.reserve(ends);
  projections_.reserve(ends * (condition_->key_size() + condition_->unequal_size()));
  last_of_instance_.reserve(ends);
}

uint32_t StepEndIndex::add(const PairEnd& end) {
  const auto pos = static_cast<uint32_t>(ends_.size());
  ends_.push_back(end);
  present_.push_back(true);
  const uint64_t instance = mix_key(end.instance);
  if (uint32_t* last = last_of_instance_.find(instance, [](uint32_t) { return true; })) {
    previous_of_instance_.push_back(*last);
    *last = pos;
  } else {
    previous_of_instance_.push_back(kNone);
    last_of_instance_.insert(instance, pos);
  }
  std::vector<const Value*>& p = add_scratch_;
  uint32_t g = kNone;
  if (project(end, p)) {
    g = find_group(p);
    if (g == kNone) {
      g = static_cast<uint32_t>(groups_.size());
      groups_.emplace_back();
      if (condition_->groupable()) groups_by_key_.insert(projection_hash(p, nullptr, 0), g);
    }
  }
  const size_t width = condition_->key_size() + condition_->unequal_size();
  // Projections are read for groupable conditions only; the others keep the layout (one per end).
  if (g == kNone || !condition_->groupable()) p.assign(width, nullptr);
  projections_.insert(projections_.end(), p.begin(), p.end());
  group_of_.push_back(g);
  next_in_group_.push_back(kNone);
  if (g == kNone) return pos;
  Group& group = groups_[g];
  if (group.first == kNone) {
    group.first = pos;
  } else {
    const size_t nk = condition_->key_size();
    for (size_t j = 0; condition_->groupable() && j < condition_->unequal_size(); ++j)
      if ((group.uniform >> j & 1u) && !(*p[nk + j] == *unequal_of(group.first, j))) group.uniform &= ~(1u << j);
    next_in_group_[group.last] = pos;
  }
  group.last = pos;
  ++group.present;
  group.has_double = group.has_double || end.value->is_double();
  if (group.counted) count(pos, +1);
  return pos;
}

void StepEndIndex::remove(uint32_t pos) {
  if (!present_[pos]) return;
  present_[pos] = false;
  const uint32_t g = group_of_[pos];
  if (g == kNone) return;
  --groups_[g].present;
  if (groups_[g].counted) count(pos, -1);
}

bool StepEndIndex::admitted(const PairEnd& x, const std::vector<const Value*>& p, uint32_t pos) const {
  if (!condition_->groupable()) return condition_->holds_exactly(x, ends_[pos]);
  const size_t nk = condition_->key_size(), width = nk + condition_->unequal_size();
  const Value* const* q = projections_.data() + static_cast<size_t>(pos) * width;
  for (size_t j = 0; j < condition_->unequal_size(); ++j)
    if (*q[nk + j] == *p[nk + j]) return false;
  return true;
}

bool StepEndIndex::pairs_with(const PairEnd& x, uint32_t pos) const {
  const PairEnd& e = ends_[pos];
  return present_[pos] && e.instance != x.instance && !(x.peer && e.peer) && admitted(x, scratch_, pos);
}

uint32_t StepEndIndex::candidate_group(const PairEnd& x) {
  if (!project(x, scratch_)) return kNone;
  const uint32_t g = find_group(scratch_);
  if (g == kNone) return kNone;
  const Group& group = groups_[g];
  const size_t nk = condition_->key_size();
  if (condition_->groupable())
    for (size_t j = 0; j < condition_->unequal_size(); ++j)
      if ((group.uniform >> j & 1u) && *scratch_[nk + j] == *unequal_of(group.first, j)) return kNone;
  return g;
}

PairTally StepEndIndex::tally(const PairEnd& x) {
  PairTally t;
  const uint32_t g = candidate_group(x);
  if (g == kNone) return t;
  Group& group = groups_[g];
  const bool by_count = condition_->groupable() && !group.has_double && !x.value->is_double() &&
                        (group.counted || group.present >= kCountedGroupSize);
  if (by_count && !group.counted) {  // first needed now: built once, then kept up by add and remove
    group.counted = true;
    for (uint32_t m = group.first; m != kNone; m = next_in_group_[m])
      if (present_[m]) count(m, +1);
  }
  if (!by_count) {
    for (uint32_t pos = group.first; pos != kNone; pos = next_in_group_[pos])
      if (pairs_with(x, pos)) {
        ++t.triggered;
        if (!ConsistencyRelation::close_values(*x.value, *ends_[pos].value)) ++t.violations;
      }
    return t;
  }
  // Inclusion-exclusion: pairs differing on every unequal property = sum over subsets S of them of
  // (-1)^|S| x (ends agreeing with x on S); with the value in the projection, those also equal to x.
  int64_t admitted_pairs = 0, equal_pairs = 0;
  hash_projections(scratch_, x.value);
  for (uint32_t mask = 0; mask < (1u << condition_->unequal_size()); ++mask) {
    const int64_t sign = std::popcount(mask) % 2 ? -1 : 1;
    admitted_pairs += sign * static_cast<int64_t>(counted(hashes_[2 * mask], scratch_, nullptr, mask, !x.peer));
    equal_pairs += sign * static_cast<int64_t>(counted(hashes_[2 * mask + 1], scratch_, x.value, mask, !x.peer));
  }
  // The counts include x's own instance's ends, which never pair with x.
  if (const uint32_t* own = last_of_instance_.find(mix_key(x.instance), [](uint32_t) { return true; }))
    for (uint32_t pos = *own; pos != kNone; pos = previous_of_instance_[pos])
      if (present_[pos] && group_of_[pos] == g && !(x.peer && ends_[pos].peer) && admitted(x, scratch_, pos)) {
        --admitted_pairs;
        if (*ends_[pos].value == *x.value) --equal_pairs;
      }
  t.triggered = static_cast<uint64_t>(admitted_pairs);
  t.violations = static_cast<uint64_t>(admitted_pairs - equal_pairs);
  return t;
}

size_t StepEndIndex::violations(const PairEnd& x, size_t limit, const std::function<void(uint32_t)>& f) {
  size_t n = 0;
  if (limit == 0) return 0;
  const uint32_t g = candidate_group(x);
  if (g == kNone) return 0;
  for (uint32_t pos = groups_[g].first; pos != kNone; pos = next_in_group_[pos]) {
    if (!pairs_with(x, pos) || ConsistencyRelation::close_values(*x.value, *ends_[pos].value)) continue;
    f(pos);
    if (++n == limit) break;
  }
  return n;
}

}  // namespace traincheck
