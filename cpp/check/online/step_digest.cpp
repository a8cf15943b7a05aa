#include "check/online/step_digest.h"

#include <cstring>

#include "common/position_table.h"
#include "common/short_text_hash.h"
#include "trace/value.h"

namespace traincheck {

namespace {

// The kind's tag mixed in after the content's hash, so that values of two kinds never meet by their bits
// (an int 1 and the double whose bits are 1 ^ a tag once did). Arrays by position, objects by key in any
// order, both value by value: as JSON text a NaN, an infinity and null were one.
uint64_t value_hash(const Value& v) {
  auto tagged = [](uint64_t content, uint64_t tag) { return mix_key(mix_key(content) ^ tag); };
  switch (v.kind()) {
    case ValueKind::Null: return tagged(0, 1);
    case ValueKind::Bool: return tagged(v.as_bool() ? 1 : 0, 2);
    case ValueKind::Int: return tagged(static_cast<uint64_t>(v.as_int()), 3);
    case ValueKind::Double: {
      const double d = v.as_double();
      uint64_t bits = 0;
      std::memcpy(&bits, &d, sizeof bits);
      return tagged(bits, 4);
    }
    case ValueKind::String: return tagged(short_text_hash(v.as_string()), 5);
    case ValueKind::Array: {
      uint64_t h = v.as_array().size();
      for (const Value& e : v.as_array()) h = mix_key(h ^ value_hash(e));
      return tagged(h, 6);
    }
    case ValueKind::Object: {
      uint64_t sum = 0;
      for (const Member& m : v.as_object()) sum += mix_key(short_text_hash(key_name(m.key)) ^ value_hash(m.value));
      return tagged(sum ^ v.as_object().size(), 7);
    }
  }
  return 0;
}

}  // namespace

StepDigester::StepDigester(const std::vector<KeyId>& kept) {
  for (KeyId k : kept) {
    if (is_rank_identity_key(key_name(k))) continue;
    if (k >= key_hash_.size()) key_hash_.resize(k + 1, 0);
    key_hash_[k] = short_text_hash(key_name(k)) | 1;  // never 0: 0 marks a field left out
  }
}

uint64_t StepDigester::field_digest(const Field& f) const {
  return f.key < key_hash_.size() && key_hash_[f.key] != 0 ? mix_key(key_hash_[f.key] ^ mix_key(value_hash(f.value))) : 0;
}

uint64_t StepDigester::of(const Record& record) const {
  uint64_t sum = 0;
  record.for_each_field([&](const Field& f) { sum += field_digest(f); });
  return sum;
}

uint64_t StepDigester::combine(const std::vector<uint64_t>& variables) {
  uint64_t sum = 0;
  for (uint64_t v : variables) sum += mix_key(v);
  return mix_key(sum ^ variables.size());
}

}  // namespace traincheck
