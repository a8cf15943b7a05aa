#include "invariant/example_groups.h"

#include <algorithm>

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
    : spilled_(other.spilled_ ? std::make_unique<std::vector<std::vector<uint32_t>>>(*other.spilled_) : nullptr),
      inline_count_(other.inline_count_),
      inline_groups_(other.inline_groups_) {
  std::copy(std::begin(other.inline_records_), std::end(other.inline_records_), inline_records_);
}

ExampleGroups& ExampleGroups::operator=(const ExampleGroups& other) {
  if (this != &other) *this = ExampleGroups(other);
  return *this;
}

void ExampleGroups::assign(std::span<const std::span<const uint32_t>> groups) {
  if (groups.size() == 1 && groups[0].size() <= kInlineRecords) {
    inline_groups_ = 1;
    inline_count_ = static_cast<uint8_t>(groups[0].size());
    std::copy(groups[0].begin(), groups[0].end(), inline_records_);
    return;
  }
  if (groups.empty()) return;
  spilled_ = std::make_unique<std::vector<std::vector<uint32_t>>>();
  spilled_->reserve(groups.size());
  for (std::span<const uint32_t> g : groups) spilled_->emplace_back(g.begin(), g.end());
}

std::span<const uint32_t> ExampleGroups::operator[](size_t g) const {
  TC_ASSERT(g < size(), "a group of this example");
  if (spilled_) return (*spilled_)[g];
  return {inline_records_, inline_count_};
}

}  // namespace traincheck
