#include "relations/tensor_paths.h"

namespace traincheck {

namespace {
constexpr std::string_view kTensorType = "torch.Tensor";
}

bool usable_path_value(const Value& v) { return v.is_hashable() && !v.is_nan(); }

const Value* tensor_value_at(const std::vector<const Object*>& tensors, const IoPath& path) {
  if (path.tensor < 0 || static_cast<size_t>(path.tensor) >= tensors.size()) return nullptr;
  for (const Member& m : *tensors[path.tensor]) {
    if (key_name(m.key) != path.attr) continue;
    if (path.element < 0) return &m.value;
    if (!m.value.is_array() || static_cast<size_t>(path.element) >= m.value.as_array().size()) return nullptr;
    return &m.value.as_array()[path.element];
  }
  return nullptr;
}

Param tensor_path_param(const IoPath& p, std::string_view function, bool is_input) {
  Param q;
  q.type = ParamType::InputOutput;
  q.name = Name(is_input ? "input_tensors" : "output_tensors");
  q.index = Value::integer(p.tensor);
  q.io_type = Name(kTensorType);
  Array path{Value::string(p.attr)};
  if (p.element >= 0) path.push_back(Value::integer(p.element));
  q.additional_path = Value::array(std::move(path));
  q.api_name = Name(function);
  q.is_input = is_input;
  return q;
}

std::optional<IoPath> tensor_path_of(const Param& p) {
  if (p.type != ParamType::InputOutput || !p.index.is_int() || !p.additional_path.is_array()) return std::nullopt;
  const Array& a = p.additional_path.as_array();
  if (a.empty() || a.size() > 2 || !a[0].is_string() || (a.size() == 2 && !a[1].is_int())) return std::nullopt;
  return IoPath{p.index.as_int(), a[0].as_string(), a.size() == 2 ? a[1].as_int() : -1};
}

std::string describe_tensor_path(std::string_view side, const IoPath& p) {
  return std::string(side) + " " + std::to_string(p.tensor) + "." + p.attr +
         (p.element >= 0 ? "[" + std::to_string(p.element) + "]" : std::string());
}

}  // namespace traincheck
