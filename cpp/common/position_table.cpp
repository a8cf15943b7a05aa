#include "common/position_table.h"

#include <algorithm>

namespace traincheck {

void PositionTable::reserve(size_t entries) {
  size_t slots = 64;
  while (slots < 2 * entries) slots *= 2;
  if (slots > slots_.size()) grow(slots);
}

void PositionTable::grow(size_t slots) {
  std::vector<Slot> old(slots);
  old.swap(slots_);
  const size_t wrap = slots_.size() - 1;
  for (const Slot& s : old)
    if (s.value != kNone)
      for (size_t i = s.hash & wrap;; i = (i + 1) & wrap)
        if (slots_[i].value == kNone) {
          slots_[i] = s;
          break;
        }
}

void PositionTable::insert(uint64_t hash, uint32_t value) {
  if (2 * (used_ + 1) > slots_.size()) grow(std::max<size_t>(64, 2 * slots_.size()));
  const size_t wrap = slots_.size() - 1;
  for (size_t i = hash & wrap;; i = (i + 1) & wrap)
    if (slots_[i].value == kNone) {
      slots_[i] = Slot{hash, value};
      ++used_;
      return;
    }
}

}  // namespace traincheck
