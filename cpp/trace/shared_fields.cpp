#include "trace/shared_fields.h"

#include <cstring>

namespace traincheck {

namespace {

// Blocks kept for sharing per file; past this many distinct ones (a trace of ever-new strings) the table
// starts over, which only loses sharing, never fields.
constexpr size_t kMaxBlocks = 50000;

void append_bytes(std::string& key, const void* p, size_t n) { key.append(static_cast<const char*>(p), n); }

// Tells values apart for counting them: a collision only makes a key look less varied.
uint64_t fingerprint(const Value& v) {
  if (v.is_string()) return std::hash<std::string_view>{}(v.as_string());
  if (const void* payload = v.payload_id()) return reinterpret_cast<uintptr_t>(payload);
  if (v.is_double()) {
    const double d = v.as_double();
    uint64_t bits;
    std::memcpy(&bits, &d, sizeof bits);
    return bits ^ 0x5bd1e995u;
  }
  if (v.is_int()) return static_cast<uint64_t>(v.as_int()) * 0x9e3779b97f4a7c15ULL;
  return v.is_bool() ? (v.as_bool() ? 1 : 2) : 3;
}

}  // namespace

bool SharedFieldBlocks::shareable(const Field& f) {
  if (f.key == keys().func_call_id) return false;  // unique to one call
  KeyValues& values = keys_[f.key];
  if (values.varies) return false;
  values.seen.insert(fingerprint(f.value));
  if (values.seen.size() <= kMaxDistinct) return true;
  values.varies = true;
  std::unordered_set<uint64_t>().swap(values.seen);
  return false;
}

std::vector<Field> SharedFieldBlocks::split(Record& record) {
  own_.clear();
  shared_.clear();
  for (Field& f : record.fields) (shareable(f) ? shared_ : own_).push_back(std::move(f));
  std::vector<Field> buffer = std::move(record.fields);
  buffer.clear();
  record.fields = std::vector<Field>(std::make_move_iterator(own_.begin()), std::make_move_iterator(own_.end()));
  if (shared_.empty()) return buffer;

  // The exact content: key ids, kinds and values (string bytes with their length), so that equal keys
  // mean equal blocks.
  key_.clear();
  for (const Field& f : shared_) {
    append_bytes(key_, &f.key, sizeof f.key);
    key_.push_back(static_cast<char>(f.value.kind()));
    if (f.value.is_string()) {
      const std::string& s = f.value.as_string();
      const uint32_t n = static_cast<uint32_t>(s.size());
      append_bytes(key_, &n, sizeof n);
      key_.append(s);
    } else if (f.value.is_bool()) {
      key_.push_back(f.value.as_bool() ? '1' : '0');
    } else if (f.value.is_int()) {
      const int64_t v = f.value.as_int();
      append_bytes(key_, &v, sizeof v);
    } else if (f.value.is_double()) {
      const double v = f.value.as_double();
      append_bytes(key_, &v, sizeof v);
    } else if (const void* payload = f.value.payload_id()) {
      // An array or object by its payload: the parser shares equal small ones, and an unshared equal
      // one only makes another block.
      append_bytes(key_, &payload, sizeof payload);
    }
  }
  auto it = blocks_.find(key_);
  if (it == blocks_.end()) {
    if (blocks_.size() >= kMaxBlocks) blocks_.clear();
    Object members(std::make_move_iterator(shared_.begin()), std::make_move_iterator(shared_.end()));
    it = blocks_.emplace(key_, Value::object(std::move(members))).first;
  }
  record.shared_fields = it->second;
  return buffer;
}

}  // namespace traincheck
