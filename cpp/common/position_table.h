// A flat table of positions by 64-bit hash, and the mixer that makes a dense key a hash for it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace traincheck {

// splitmix64's finalizer: a bijection, so a 64-bit key's mix is as exact a key as the key itself, and
// dense keys (interned ids) spread over the table's low bits.
inline uint64_t mix_key(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// Positions (uint32) found by a 64-bit hash: open addressing, linear probing, never erased, at most half
// full. Where a model's tens of thousands of variables are found every step (a Consistency step index's
// groups and instances, the cross-rank exchange's variables of a step), a node-based map per entry cost
// more than the work it served (bench/README.md, consistency_scale).
class PositionTable {
 public:
  static constexpr uint32_t kNone = 0xFFFFFFFFu;
  void reserve(size_t entries);
  // The value stored under `hash` that `same(value)` accepts (a key that is the hash itself: any), or
  // nullptr.
  template <class Same>
  uint32_t* find(uint64_t hash, Same&& same) {
    if (slots_.empty()) return nullptr;
    const size_t wrap = slots_.size() - 1;
    for (size_t i = hash & wrap;; i = (i + 1) & wrap) {
      Slot& s = slots_[i];
      if (s.value == kNone) return nullptr;
      if (s.hash == hash && same(s.value)) return &s.value;
    }
  }
  // Stores `value` under `hash` (the caller found none for its key).
  void insert(uint64_t hash, uint32_t value);

 private:
  struct Slot {
    uint64_t hash = 0;
    uint32_t value = kNone;  // kNone: free
  };
  void grow(size_t slots);
  std::vector<Slot> slots_;  // size 0 or a power of two
  size_t used_ = 0;
};

}  // namespace traincheck
