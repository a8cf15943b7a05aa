// Builds an event payload (tagged values, see event_format.h) in a reusable per-thread buffer.
// Used on the training thread; after warm-up it never allocates.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "record/event_format.h"

namespace traincheck {

class PayloadEncoder {
 public:
  PayloadEncoder() { bytes_.reserve(4096); }

  void clear() { bytes_.clear(); }
  const std::byte* data() const { return bytes_.data(); }
  uint32_t size() const { return static_cast<uint32_t>(bytes_.size()); }

  void section(SectionTag tag) { put(static_cast<uint8_t>(tag)); }
  void none() { tag(ValueTag::kNone); }
  void boolean(bool v) { tag(v ? ValueTag::kTrue : ValueTag::kFalse); }
  void integer(int64_t v) { tag(ValueTag::kInt); put(v); }
  void real(double v) { tag(ValueTag::kFloat); put(v); }
  void str(std::string_view s) { tag(ValueTag::kStr); text(s); }
  void big_integer(std::string_view digits) { tag(ValueTag::kBigInt); text(digits); }
  void object(uint32_t type_name_id) { tag(ValueTag::kObject); put(type_name_id); }
  void module(uint32_t type_name_id, bool training) {
    tag(ValueTag::kModule);
    put(type_name_id);
    put(static_cast<uint8_t>(training));
  }
  void named_value(uint32_t type_name_id, uint32_t text_id) {
    tag(ValueTag::kNamedValue);
    put(type_name_id);
    put(text_id);
  }
  void tensor(const TensorSummary& summary, const int64_t* dims) {
    tag(ValueTag::kTensor);
    put(summary);
    append(dims, sizeof(int64_t) * summary.ndim);
  }
  void truncated() { tag(ValueTag::kTruncated); }

  // Containers: begin returns a position; end_container patches the element count there.
  size_t begin_container(ValueTag kind) {
    tag(kind);
    const size_t at = bytes_.size();
    put(uint32_t{0});
    return at;
  }
  void end_container(size_t at, uint32_t count) { std::memcpy(bytes_.data() + at, &count, sizeof count); }
  size_t begin_count() {  // a bare u32 count (argument sections)
    const size_t at = bytes_.size();
    put(uint32_t{0});
    return at;
  }
  void position(uint32_t index) { put(index); }  // a positional argument's index, before its value
  void text(std::string_view s) {
    put(static_cast<uint32_t>(s.size()));
    append(s.data(), s.size());
  }

  void raw(const void* p, size_t n) { append(p, n); }
  void patch(size_t at, const void* p, size_t n) { std::memcpy(bytes_.data() + at, p, n); }

  // Rolls back to a mark (used when capturing a value fails half-way).
  size_t mark() const { return bytes_.size(); }
  void rollback(size_t mark) { bytes_.resize(mark); }

 private:
  void tag(ValueTag t) { put(static_cast<uint8_t>(t)); }
  template <class T>
  void put(const T& v) {
    append(&v, sizeof v);
  }
  void append(const void* p, size_t n) {
    const size_t at = bytes_.size();
    bytes_.resize(at + n);
    std::memcpy(bytes_.data() + at, p, n);
  }
  std::vector<std::byte> bytes_;
};

}  // namespace traincheck
