// A fast hash of short texts (keys, call ids, names: tens of bytes): 8 bytes at a time,
// multiply-xorshift. std::hash's murmur was a tenth of the trace reader's time, and hashing each call's
// func_call_id (47 bytes) for the online checks' open-call tables showed in the replayed offline check.
// Not for adversarial input spread (no seed); tables that use it are bounded or per trace.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace traincheck {

inline uint64_t short_text_hash(std::string_view s) noexcept {
  uint64_t h = 0x9E3779B97F4A7C15ULL ^ s.size();
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    h = (h ^ w) * 0xBF58476D1CE4E5B9ULL;
    h ^= h >> 29;
  }
  uint64_t tail = 0;
  std::memcpy(&tail, s.data() + i, s.size() - i);
  h = (h ^ tail) * 0x94D049BB133111EBULL;
  return h ^ (h >> 31);
}

}  // namespace traincheck
