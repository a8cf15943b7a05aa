#include "relations/module_mode.h"

#include "trace/key_table.h"

namespace traincheck {

std::optional<Value> module_mode(const Value& recorded) {
  if (!recorded.is_object() || recorded.as_object().size() != 1) return std::nullopt;
  const Value& payload = recorded.as_object().front().value;
  if (!payload.is_object() || payload.as_object().size() != 1) return std::nullopt;
  const Member& flag = payload.as_object().front();
  if (key_name(flag.key) != "training" || !flag.value.is_bool()) return std::nullopt;
  return module_mode_value(flag.value.as_bool());
}

Value module_mode_value(bool training) {
  return make_object({{kModuleTypeName, make_object({{"training", Value::boolean(training)}})}});
}

std::optional<bool> self_mode(const Record& pre) {
  const WellKnownKeys& k = keys();
  const Value* bound = pre.get(k.is_bound_method);
  if (bound == nullptr || !bound->is_bool() || !bound->as_bool()) return std::nullopt;
  const Value* args = pre.get(k.args);
  const Value* self = args != nullptr && args->is_object() ? args->find("0") : nullptr;
  if (self == nullptr) return std::nullopt;
  const std::optional<Value> mode = module_mode(*self);
  if (!mode) return std::nullopt;
  return mode->as_object().front().value.as_object().front().value.as_bool();
}

}  // namespace traincheck
