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

// A value's kind and its bits (a scalar's word, a string's, array's or object's payload address): equal
// identities, equal values. The reader shares repeated strings' payloads, so a repeat is told in O(1).
struct Identity {
  ValueKind kind;
  uint64_t bits;
  bool operator==(const Identity&) const = default;
};

Identity identity(const Value& v) {
  if (const void* payload = v.payload_id()) return {v.kind(), reinterpret_cast<uintptr_t>(payload)};
  if (v.is_double()) {
    const double d = v.as_double();
    uint64_t bits;
    std::memcpy(&bits, &d, sizeof bits);
    return {v.kind(), bits};
  }
  return {v.kind(), v.is_bool() ? uint64_t{v.as_bool()} : static_cast<uint64_t>(v.is_int() ? v.as_int() : 0)};
}

}  // namespace

SharedFieldBlocks::KeyValues& SharedFieldBlocks::values_of(KeyId key) {
  if (key >= slot_of_key_.size()) slot_of_key_.resize(key + 1, 0);
  if (slot_of_key_[key] == 0) {
    keys_.emplace_back();
    slot_of_key_[key] = static_cast<uint32_t>(keys_.size());
  }
  return keys_[slot_of_key_[key] - 1];
}

std::vector<KeyId> SharedFieldBlocks::varying_keys() const {
  std::vector<KeyId> out;
  for (KeyId key = 0; key < slot_of_key_.size(); ++key)
    if (slot_of_key_[key] != 0 && keys_[slot_of_key_[key] - 1].varies) out.push_back(key);
  return out;
}

void SharedFieldBlocks::assume_varying(const std::vector<KeyId>& keys) {
  for (KeyId key : keys) {
    KeyValues& values = values_of(key);
    values.varies = true;
    std::unordered_set<uint64_t>().swap(values.seen);
  }
}

bool SharedFieldBlocks::shareable(const Field& f) {
  if (f.key == func_call_id_) return false;  // unique to one call
  KeyValues& values = values_of(f.key);
  if (values.varies) return false;
  const Identity id = identity(f.value);
  if (values.has_last && values.last_kind == id.kind && values.last_bits == id.bits) return true;  // in `seen` already
  values.has_last = true;
  values.last_kind = id.kind;
  values.last_bits = id.bits;
  values.seen.insert(fingerprint(f.value));
  if (values.seen.size() <= kMaxDistinct) return true;
  values.varies = true;
  std::unordered_set<uint64_t>().swap(values.seen);
  return false;
}

bool SharedFieldBlocks::same_content(const std::vector<Field>& shared, const Value& block) {
  const Object& members = block.as_object();
  if (members.size() != shared.size()) return false;
  for (size_t i = 0; i < shared.size(); ++i) {
    const Value& a = shared[i].value;
    const Value& b = members[i].value;
    if (shared[i].key != members[i].key || a.kind() != b.kind()) return false;
    switch (a.kind()) {
      case ValueKind::Null: break;
      case ValueKind::Bool:
        if (a.as_bool() != b.as_bool()) return false;
        break;
      case ValueKind::Int:
        if (a.as_int() != b.as_int()) return false;
        break;
      case ValueKind::Double: {
        const double x = a.as_double(), y = b.as_double();
        if (std::memcmp(&x, &y, sizeof x) != 0) return false;
        break;
      }
      case ValueKind::String:
        if (!a.same_payload(b) && a.as_string() != b.as_string()) return false;
        break;
      case ValueKind::Array:
      case ValueKind::Object:
        if (!a.same_payload(b)) return false;
        break;
    }
  }
  return true;
}

std::vector<Field> SharedFieldBlocks::split(Record& record) {
  own_.clear();
  shared_.clear();
  for (Field& f : record.fields) (shareable(f) ? shared_ : own_).push_back(std::move(f));
  std::vector<Field> buffer = std::move(record.fields);
  buffer.clear();
  record.fields = std::vector<Field>(std::make_move_iterator(own_.begin()), std::make_move_iterator(own_.end()));
  if (shared_.empty()) return buffer;
  uint64_t h = 0x9E3779B97F4A7C15ULL;
  for (const Field& f : shared_) {
    const Identity id = identity(f.value);
    h = (h ^ (uint64_t{f.key} << 8 | static_cast<uint64_t>(id.kind))) * 0xBF58476D1CE4E5B9ULL;
    h = (h ^ id.bits) * 0x94D049BB133111EBULL;
  }
  RecentBlock& recent = recent_[(h ^ (h >> 29)) & (kRecentBlocks - 1)];
  if (recent.hash == h && recent.block.is_object() && same_content(shared_, recent.block)) {
    record.shared_fields = recent.block;
    return buffer;
  }

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
  recent = RecentBlock{h, it->second};
  return buffer;
}

}  // namespace traincheck
