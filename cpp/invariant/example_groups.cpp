#include "invariant/example_groups.h"

#include <algorithm>
#include <memory>

#include "common/assert.h"

namespace traincheck {

ExampleGroups::ExampleGroups(std::initializer_list<std::initializer_list<uint32_t>> groups) {
  std::vector<std::span<const uint32_t>> spans;
  spans.reserve(groups.size());
  for (const auto& g : groups) spans.emplace_back(g.begin(), g.size());
  assign(spans);
}

ExampleGroups::ExampleGroups(const std::vector<std::vector<uint32_t>>& groups) {
  std::vector<std::span<const uint32_t>> spans(groups.begin(), groups.end());
  assign(spans);
}

ExampleGroups::ExampleGroups(const ExampleGroups& other)
    : inline_count_(other.inline_count_), inline_groups_(other.inline_groups_), spilled_(other.spilled_) {
  if (spilled_) heap_ = new std::vector<std::vector<uint32_t>>(*other.heap_);
  else std::copy(std::begin(other.inline_records_), std::end(other.inline_records_), inline_records_);
}

ExampleGroups& ExampleGroups::operator=(const ExampleGroups& other) {
  if (this != &other) *this = ExampleGroups(other);
  return *this;
}

ExampleGroups::ExampleGroups(ExampleGroups&& other) noexcept { take(other); }

ExampleGroups& ExampleGroups::operator=(ExampleGroups&& other) noexcept {
  if (this != &other) {
    release();
    take(other);
  }
  return *this;
}

void ExampleGroups::take(ExampleGroups& other) {
  inline_count_ = other.inline_count_;
  inline_groups_ = other.inline_groups_;
  spilled_ = other.spilled_;
  if (spilled_) heap_ = other.heap_;
  else std::copy(std::begin(other.inline_records_), std::end(other.inline_records_), inline_records_);
  other.spilled_ = false;
  other.inline_count_ = other.inline_groups_ = 0;
}

ExampleGroups::~ExampleGroups() { release(); }

void ExampleGroups::release() {
  if (spilled_) delete heap_;
  spilled_ = false;
}

void ExampleGroups::assign(std::span<const std::span<const uint32_t>> groups) {
  if (groups.size() == 1 && groups[0].size() <= kInlineRecords) {
    inline_groups_ = 1;
    inline_count_ = static_cast<uint8_t>(groups[0].size());
    std::copy(groups[0].begin(), groups[0].end(), inline_records_);
    return;
  }
  if (groups.empty()) return;
  auto heap = std::make_unique<std::vector<std::vector<uint32_t>>>();
  heap->reserve(groups.size());
  for (std::span<const uint32_t> g : groups) heap->emplace_back(g.begin(), g.end());
  heap_ = heap.release();
  spilled_ = true;
}

std::span<const uint32_t> ExampleGroups::operator[](size_t g) const {
  TC_ASSERT(g < size(), "a group of this example");
  if (spilled_) return (*heap_)[g];
  return {inline_records_, inline_count_};
}

}  // namespace traincheck
