// Places in the tensors a call takes or returns (ConsistentInputOutput, Threshold): tensor i of the
// inputs or outputs, one of its attributes, and for a list attribute (shape) one element; the
// InputOutputParam that names such a place in an invariant file (docs/formats.md §Params).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "invariant/param.h"
#include "trace/record.h"

namespace traincheck {

// Tensor `tensor`, its attribute `attr`, and for a list attribute its element `element` (-1: the
// attribute itself).
struct IoPath {
  int64_t tensor = 0;
  std::string attr;
  int64_t element = -1;
};

// Whether a value can be compared at a path: hashable (a scalar) and not NaN.
bool usable_path_value(const Value& v);

// Calls f(path, value) for every usable value of `tensors`, list attributes expanded into their
// elements; the tool's id attributes (_TRAINCHECK_*_ID) are left out: ids differ run to run.
template <typename F>
void for_each_tensor_value(const std::vector<const Object*>& tensors, F&& f) {
  for (size_t t = 0; t < tensors.size(); ++t)
    for (const Member& m : *tensors[t]) {
      const std::string_view attr = key_name(m.key);
      if (is_tool_attribute(attr)) continue;
      if (usable_path_value(m.value)) {
        f(IoPath{static_cast<int64_t>(t), std::string(attr), -1}, m.value);
      } else if (m.value.is_array()) {
        const Array& items = m.value.as_array();
        for (size_t k = 0; k < items.size(); ++k)
          if (usable_path_value(items[k])) f(IoPath{static_cast<int64_t>(t), std::string(attr), static_cast<int64_t>(k)}, items[k]);
      }
    }
}

// The value at `path`, or null when the tensor, attribute or element is missing.
const Value* tensor_value_at(const std::vector<const Object*>& tensors, const IoPath& path);

// InputOutputParam("input_tensors"/"output_tensors", index, "torch.Tensor", [attr(, element)], function).
Param tensor_path_param(const IoPath& path, std::string_view function, bool is_input);
// The path such a param names; nullopt for any other param.
std::optional<IoPath> tensor_path_of(const Param& param);
// "input 0.shape[0]".
std::string describe_tensor_path(std::string_view side, const IoPath& path);

}  // namespace traincheck
