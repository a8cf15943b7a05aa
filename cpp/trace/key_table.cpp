#include "trace/key_table.h"

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <stdexcept>
#include <unordered_map>

#include "common/assert.h"

namespace traincheck {
namespace {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

// Names live in fixed-size chunks that never move, so key_name() can read them without the lock while
// another thread appends.
constexpr size_t kChunkBits = 12;
constexpr size_t kChunkSize = size_t{1} << kChunkBits;
constexpr size_t kMaxChunks = 4096;  // 16M distinct keys

struct KeyTable {
  std::shared_mutex mutex;
  std::unordered_map<std::string, KeyId, StringHash, std::equal_to<>> ids;
  std::array<std::atomic<std::string*>, kMaxChunks> chunks{};
  size_t count = 0;

  ~KeyTable() {
    for (auto& c : chunks) delete[] c.load();
  }
};

KeyTable& table() {
  static KeyTable* t = new KeyTable();  // never destroyed: ids may be used during static destruction
  return *t;
}

}  // namespace

std::string canonical_key_name(std::string_view name) {
  std::string out(name);
  size_t pos = 0;
  while ((pos = out.find(kLegacyToolPrefix, pos)) != std::string::npos) {
    out.replace(pos, kLegacyToolPrefix.size(), kToolPrefix);
    pos += kToolPrefix.size();
  }
  return out;
}

namespace {

// `raw` with the legacy prefix folded (into `buffer`, which then holds the text) when it has one.
std::string_view folded_key(std::string_view raw, std::string& buffer) {
  if (raw.find(kLegacyToolPrefix) == std::string_view::npos) return raw;
  buffer = canonical_key_name(raw);
  return buffer;
}

}  // namespace

std::optional<KeyId> find_key(std::string_view raw) {
  KeyTable& t = table();
  std::string folded;
  const std::string_view name = folded_key(raw, folded);
  std::shared_lock lock(t.mutex);
  auto it = t.ids.find(name);
  if (it == t.ids.end()) return std::nullopt;
  return it->second;
}

KeyId intern_key(std::string_view raw) {
  KeyTable& t = table();
  std::string folded;
  const std::string_view name = folded_key(raw, folded);
  {
    std::shared_lock lock(t.mutex);
    auto it = t.ids.find(name);
    if (it != t.ids.end()) return it->second;
  }
  std::unique_lock lock(t.mutex);
  auto it = t.ids.find(name);
  if (it != t.ids.end()) return it->second;
  const size_t id = t.count;
  const size_t chunk = id >> kChunkBits;
  if (chunk >= kMaxChunks) throw std::length_error("key table full");
  std::string* block = t.chunks[chunk].load(std::memory_order_relaxed);
  if (block == nullptr) {
    block = new std::string[kChunkSize];
    t.chunks[chunk].store(block, std::memory_order_release);
  }
  block[id & (kChunkSize - 1)] = std::string(name);
  t.ids.emplace(std::string(name), static_cast<KeyId>(id));
  ++t.count;
  return static_cast<KeyId>(id);
}

std::string_view key_name(KeyId id) {
  KeyTable& t = table();
  std::string* block = t.chunks[id >> kChunkBits].load(std::memory_order_acquire);
  TC_ASSERT(block != nullptr, "a KeyId comes from intern_key or find_key");
  return block[id & (kChunkSize - 1)];
}

const WellKnownKeys& keys() {
  static const WellKnownKeys k{
      intern_key("func_call_id"),    intern_key("thread_id"),       intern_key("process_id"),
      intern_key("meta_vars.step"),  intern_key("meta_vars.stage"), intern_key("type"),
      intern_key("function"),        intern_key("is_bound_method"), intern_key("obj_id"),
      intern_key("args"),            intern_key("kwargs"),          intern_key("return_values"),
      intern_key("exception"),       intern_key("exception_msg"),   intern_key("time"),
      intern_key("var_name"),        intern_key("var_type"),        intern_key("mode"),
      intern_key("dump_loc"),        intern_key("proxy_obj_names"), intern_key("stack_trace")};
  return k;
}

}  // namespace traincheck
