// Append-only table of interned strings (API names, type names, meta-var snapshots).
//
// The training thread interns under the GIL (rarely: once per new name or per meta-var change) and keeps
// only the 32-bit id in its events; the writer thread resolves ids without the GIL and without a lock.
// Entries are never moved or freed, so a pointer read once stays valid for the process's life.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace traincheck {

class StringTable {
 public:
  static constexpr uint32_t kCapacity = 1u << 20;
  static constexpr uint32_t kInvalid = 0;  // id 0 reads as "<unknown>"

  StringTable();
  ~StringTable();  // frees the entries (the process's tables are never destroyed)
  StringTable(const StringTable&) = delete;
  StringTable& operator=(const StringTable&) = delete;

  // Adds a new entry (no de-duplication: callers cache ids themselves). Thread-safe.
  uint32_t add(std::string_view text);

  // Lock-free; an id that was returned by add() on any thread is always readable.
  std::string_view get(uint32_t id) const;

  uint32_t size() const { return count_.load(std::memory_order_acquire); }

 private:
  std::unique_ptr<std::atomic<const std::string*>[]> slots_;
  std::atomic<uint32_t> count_{1};
  std::mutex add_mutex_;
};

}  // namespace traincheck
