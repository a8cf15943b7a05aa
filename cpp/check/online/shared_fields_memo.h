// What is derived from a record's shared fields (Record::shared_fields), computed once per shared
// field set rather than once per record.
//
// A model's state records of a step share their static fields with the earlier records of their
// variable (check/online/var_line_templates.h): at 50k parameters, the cross-rank exchange encoding
// and digesting those fields for every record, their strings cold in memory, was a quarter of the
// writer thread's checking (bench/README.md, consistency_scale). Here a field set is derived once and
// found by its payload after that. Only field sets records share are kept (Record::shared_fields_common);
// a parsed record's own, met once, is the caller's to derive.
//
// A memo keeps its payload alive, so a payload's address is never another's while it is held. Held
// payloads nothing else references (their variable's template was replaced, and no record holds them)
// are dropped when the table fills; past kMaxSlots the table starts again empty. One thread only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/position_table.h"
#include "trace/value.h"

namespace traincheck {

template <typename T>
class SharedFieldsMemo {
 public:
  static constexpr size_t kMaxSlots = size_t{1} << 20;

  // The memo of `shared` (an object payload), made by make(shared) the first time.
  template <typename Make>
  const T& find(const Value& shared, Make&& make) {
    const uintptr_t address = reinterpret_cast<uintptr_t>(shared.payload_id());
    const uint64_t hash = mix_key(address);
    if (!slots_.empty())
      for (size_t i = hash & (slots_.size() - 1);; i = (i + 1) & (slots_.size() - 1)) {
        Slot& s = slots_[i];
        if (s.payload.is_null()) break;
        if (s.payload.same_payload(shared)) return s.memo;
      }
    if (2 * (used_ + 1) > slots_.size()) make_room();
    return insert(Slot{shared, make(shared)}, hash)->memo;
  }

  size_t size() const { return used_; }

 private:
  struct Slot {
    Value payload;  // null: free
    T memo{};
  };

  Slot* insert(Slot slot, uint64_t hash) {
    for (size_t i = hash & (slots_.size() - 1);; i = (i + 1) & (slots_.size() - 1))
      if (slots_[i].payload.is_null()) {
        slots_[i] = std::move(slot);
        ++used_;
        return &slots_[i];
      }
  }

  // Drops the memos whose payload only this holds, then grows if still over half full (or, at
  // kMaxSlots, starts again empty).
  void make_room() {
    std::vector<Slot> old;
    old.swap(slots_);
    size_t live = 0;
    for (const Slot& s : old) live += !s.payload.is_null() && s.payload.payload_references() > 1;
    size_t size = std::max<size_t>(1024, old.size());
    while (size < kMaxSlots && 2 * (live + 1) > size) size *= 2;
    slots_.assign(size, Slot{});
    used_ = 0;
    if (2 * (live + 1) > size) return;  // at the limit: all dropped
    for (Slot& s : old)
      if (!s.payload.is_null() && s.payload.payload_references() > 1) {
        const uint64_t hash = mix_key(reinterpret_cast<uintptr_t>(s.payload.payload_id()));
        insert(std::move(s), hash);
      }
  }

  std::vector<Slot> slots_;  // open addressing: empty, or a power of two at most half full
  size_t used_ = 0;
};

}  // namespace traincheck
