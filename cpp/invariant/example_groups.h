// The records of one example, per group (Example::groups in relation.h).
//
// Inference holds every example of every hypothesis at once (millions on a long trace), and nearly all
// of them are one group of one or two records: a call's pre-record, or the two states a Consistency or
// DistinctArgument example compares. A vector of vectors spent two allocations (about 60 bytes of heap)
// on those 4 or 8 bytes, which was a fifth of traincheck-infer's peak memory (bench/memory_bench).
// So one group of up to two records is held inline; any other shape is kept on the heap as before, its
// pointer in the same 8 bytes as the inline records: an Example (relation.h) is 24 bytes.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <vector>

namespace traincheck {

class ExampleGroups {
 public:
  ExampleGroups() = default;
  ExampleGroups(std::initializer_list<std::initializer_list<uint32_t>> groups);
  explicit ExampleGroups(const std::vector<std::vector<uint32_t>>& groups);
  ExampleGroups(const ExampleGroups& other);
  ExampleGroups& operator=(const ExampleGroups& other);
  ExampleGroups(ExampleGroups&& other) noexcept;
  ExampleGroups& operator=(ExampleGroups&& other) noexcept;
  ~ExampleGroups();

  size_t size() const { return spilled_ ? heap_->size() : inline_groups_; }
  bool empty() const { return size() == 0; }
  // Group g's record indices, in the order given.
  std::span<const uint32_t> operator[](size_t g) const;

  // True when the records live inline (no heap); for tests of the layout.
  bool is_inline() const { return !spilled_; }

 private:
  static constexpr size_t kInlineRecords = 2;

  void assign(std::span<const std::span<const uint32_t>> groups);

  void release();                     // frees the heap copy, if any
  void take(ExampleGroups& other);    // moves `other` in (this holds nothing), leaving it empty

  union {
    uint32_t inline_records_[kInlineRecords] = {};
    std::vector<std::vector<uint32_t>>* heap_;  // owned; set when spilled_
  };
  uint8_t inline_count_ = 0;   // records of the inline group
  uint8_t inline_groups_ = 0;  // 0 or 1
  bool spilled_ = false;       // the shape did not fit inline
};

}  // namespace traincheck
