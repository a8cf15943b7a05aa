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
// A derivation is a value (T) and bytes (the exchange's encoding of the fields). Both are laid out in
// the order the sets were first found, and a set is looked for first right after the last one found:
// a step's records come in the order of the step before, so a step's lookups walk the memo from one end
// to the other (no hashing, no cache miss the hardware prefetcher does not see coming). Laid out by
// address instead, the lookups and the bytes' copies missed the cache once each per record: a third of
// the exchange's cost at 50k parameters (bench/README.md, consistency_scale).
//
// A memo keeps its payload alive, so a payload's address is never another's while it is held. Held
// payloads nothing else references (their variable's template was replaced, and no record holds them)
// are dropped when the table fills; past kMaxSlots the table starts again empty. One thread only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/position_table.h"
#include "trace/value.h"

namespace traincheck {

template <typename T>
class SharedFieldsMemo {
 public:
  static constexpr size_t kMaxSlots = size_t{1} << 20;

  struct Derived {
    const T& value;
    std::string_view bytes;  // valid until the next find()
  };

  // The derivation of `shared` (an object payload), made the first time by make(shared, bytes): it
  // returns the value and appends the bytes.
  template <typename Make>
  Derived find(const Value& shared, Make&& make) {
    if (next_ < entries_.size() && entries_[next_].payload.same_payload(shared)) return found(next_);
    const uint64_t hash = mix_key(reinterpret_cast<uintptr_t>(shared.payload_id()));
    if (!slots_.empty())
      for (size_t i = hash & (slots_.size() - 1);; i = (i + 1) & (slots_.size() - 1)) {
        if (slots_[i] == 0) break;
        if (entries_[slots_[i] - 1].payload.same_payload(shared)) return found(slots_[i] - 1);
      }
    if (2 * (entries_.size() + 1) > slots_.size()) make_room();
    Entry entry{shared, {}, bytes_.size(), 0};
    entry.value = make(shared, bytes_);
    entry.size = bytes_.size() - entry.offset;
    entries_.push_back(std::move(entry));
    index(entries_.size() - 1, hash);
    return found(entries_.size() - 1);
  }

  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    Value payload;
    T value{};
    size_t offset = 0, size = 0;  // its bytes in bytes_
  };

  Derived found(size_t i) {
    next_ = i + 1;
    const Entry& e = entries_[i];
    return {e.value, std::string_view(bytes_).substr(e.offset, e.size)};
  }

  void index(size_t entry, uint64_t hash) {
    for (size_t i = hash & (slots_.size() - 1);; i = (i + 1) & (slots_.size() - 1))
      if (slots_[i] == 0) {
        slots_[i] = static_cast<uint32_t>(entry + 1);
        return;
      }
  }

  // Drops the entries whose payload only this holds (their bytes too, the rest keeping their order),
  // then grows the index if still over half full (or, at kMaxSlots, starts again empty).
  void make_room() {
    std::vector<Entry> live;
    std::string bytes;
    for (Entry& e : entries_)
      if (e.payload.payload_references() > 1) {
        const size_t offset = bytes.size();
        bytes.append(bytes_, e.offset, e.size);
        e.offset = offset;
        live.push_back(std::move(e));
      }
    size_t size = std::max<size_t>(1024, slots_.size());
    while (size < kMaxSlots && 2 * (live.size() + 1) > size) size *= 2;
    if (2 * (live.size() + 1) > size) {  // at the limit: all dropped
      live.clear();
      bytes.clear();
    }
    entries_.swap(live);
    bytes_.swap(bytes);
    next_ = 0;
    slots_.assign(size, 0);
    for (size_t i = 0; i < entries_.size(); ++i)
      index(i, mix_key(reinterpret_cast<uintptr_t>(entries_[i].payload.payload_id())));
  }

  std::vector<Entry> entries_;  // in the order first found
  std::string bytes_;           // their bytes, in the same order
  std::vector<uint32_t> slots_;  // open addressing over entries_: index + 1, 0 free; a power of two, at most half full
  size_t next_ = 0;              // the entry after the last one found: tried first
};

}  // namespace traincheck
