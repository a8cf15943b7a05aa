#include "record/string_table.h"

namespace traincheck {

namespace {
const std::string kUnknown = "<unknown>";
}

StringTable::StringTable() : slots_(new std::atomic<const std::string*>[kCapacity]) {
  // Only slot 0 is written up front; untouched slots cost no resident memory.
  slots_[0].store(&kUnknown, std::memory_order_relaxed);
}

StringTable::~StringTable() {
  const uint32_t count = count_.load(std::memory_order_acquire);
  for (uint32_t id = 1; id < count; ++id) delete slots_[id].load(std::memory_order_relaxed);
}

uint32_t StringTable::add(std::string_view text) {
  std::lock_guard<std::mutex> lock(add_mutex_);
  const uint32_t id = count_.load(std::memory_order_relaxed);
  if (id >= kCapacity) return kInvalid;
  slots_[id].store(new std::string(text), std::memory_order_release);
  count_.store(id + 1, std::memory_order_release);
  return id;
}

std::string_view StringTable::get(uint32_t id) const {
  if (id >= count_.load(std::memory_order_acquire)) return kUnknown;
  const std::string* s = slots_[id].load(std::memory_order_acquire);
  return s ? std::string_view(*s) : std::string_view(kUnknown);
}

}  // namespace traincheck
