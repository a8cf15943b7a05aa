#include "trace/interned_strings.h"

#include <mutex>
#include <stdexcept>

#include "common/assert.h"

namespace traincheck {

InternedStrings::~InternedStrings() {
  for (auto& c : chunks_) delete[] c.load();
}

std::optional<uint32_t> InternedStrings::find(std::string_view s) const {
  std::shared_lock lock(mutex_);
  auto it = ids_.find(s);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

uint32_t InternedStrings::intern(std::string_view s) {
  if (std::optional<uint32_t> id = find(s)) return *id;
  std::unique_lock lock(mutex_);
  auto it = ids_.find(s);
  if (it != ids_.end()) return it->second;
  const size_t id = count_;
  const size_t chunk = id >> kChunkBits;
  if (chunk >= kMaxChunks) throw std::length_error("interned string table full");
  std::string* block = chunks_[chunk].load(std::memory_order_relaxed);
  if (block == nullptr) {
    block = new std::string[kChunkSize];
    chunks_[chunk].store(block, std::memory_order_release);
  }
  block[id & (kChunkSize - 1)] = std::string(s);
  ids_.emplace(std::string(s), static_cast<uint32_t>(id));
  ++count_;
  return static_cast<uint32_t>(id);
}

std::string_view InternedStrings::text(uint32_t id) const { return str(id); }

const std::string& InternedStrings::str(uint32_t id) const {
  const std::string* block = chunks_[id >> kChunkBits].load(std::memory_order_acquire);
  TC_ASSERT(block != nullptr, "an id comes from intern or find");
  return block[id & (kChunkSize - 1)];
}

}  // namespace traincheck
