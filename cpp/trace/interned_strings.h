// An append-only, process-wide table of distinct strings, each known by a 32-bit id: what lets a record
// carry a key (key_table.h) or a name (name.h) in 4 bytes instead of a 16-byte view.
//
// Ids are dense from 0 in order of first interning and stable for the life of the process. Interning and
// finding are thread-safe; reading a string by id takes no lock, since strings live in fixed-size chunks
// that never move while another thread appends.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace traincheck {

class InternedStrings {
 public:
  InternedStrings() = default;
  InternedStrings(const InternedStrings&) = delete;
  InternedStrings& operator=(const InternedStrings&) = delete;
  ~InternedStrings();

  // The id of `s`, adding it if new. Throws std::length_error past 16M distinct strings.
  uint32_t intern(std::string_view s);
  // The id of `s` if it was ever interned; never adds.
  std::optional<uint32_t> find(std::string_view s) const;
  // The text of an id returned by intern or find; the view lives as long as the table.
  std::string_view text(uint32_t id) const;
  // The same text as the stored string itself (never moves, lives as long as the table).
  const std::string& str(uint32_t id) const;

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  static constexpr size_t kChunkBits = 12;
  static constexpr size_t kChunkSize = size_t{1} << kChunkBits;
  static constexpr size_t kMaxChunks = 4096;

  mutable std::shared_mutex mutex_;
  std::unordered_map<std::string, uint32_t, Hash, std::equal_to<>> ids_;
  std::array<std::atomic<std::string*>, kMaxChunks> chunks_{};
  size_t count_ = 0;
};

}  // namespace traincheck
