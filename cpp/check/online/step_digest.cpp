#include "check/online/step_digest.h"

#include <algorithm>
#include <cstring>

#include "common/position_table.h"
#include "common/short_text_hash.h"
#include "trace/value.h"

namespace traincheck {

namespace {

uint64_t value_hash(const Value& v) {
  switch (v.kind()) {
    case ValueKind::Null: return 0x1;
    case ValueKind::Bool: return v.as_bool() ? 0x3 : 0x2;
    case ValueKind::Int: return mix_key(static_cast<uint64_t>(v.as_int()) ^ 0x4);
    case ValueKind::Double: {
      const double d = v.as_double();
      uint64_t bits = 0;
      std::memcpy(&bits, &d, sizeof bits);
      return mix_key(bits ^ 0x5);
    }
    case ValueKind::String: return short_text_hash(v.as_string()) ^ 0x6;
    case ValueKind::Array:
    case ValueKind::Object: return short_text_hash(to_json(v)) ^ 0x7;
  }
  return 0;
}

}  // namespace

StepDigester::StepDigester(const std::vector<KeyId>& kept, const std::vector<KeyId>& rank_identity) {
  for (KeyId k : kept) {
    if (std::find(rank_identity.begin(), rank_identity.end(), k) != rank_identity.end()) continue;
    if (k >= key_hash_.size()) key_hash_.resize(k + 1, 0);
    key_hash_[k] = short_text_hash(key_name(k)) | 1;  // never 0: 0 marks a field left out
  }
}

uint64_t StepDigester::of(const Record& record) const {
  uint64_t sum = 0;
  record.for_each_field([&](const Field& f) {
    if (f.key < key_hash_.size() && key_hash_[f.key] != 0) sum += mix_key(key_hash_[f.key] ^ mix_key(value_hash(f.value)));
  });
  return sum;
}

uint64_t StepDigester::combine(const std::vector<uint64_t>& variables) {
  uint64_t sum = 0;
  for (uint64_t v : variables) sum += mix_key(v);
  return mix_key(sum ^ variables.size());
}

}  // namespace traincheck
