#include "relations/module_mode.h"

#include "trace/key_table.h"

namespace traincheck {

std::optional<bool> training_flag(const Value& recorded) {
  if (!recorded.is_object() || recorded.as_object().size() != 1) return std::nullopt;
  const Value& payload = recorded.as_object().front().value;
  if (!payload.is_object() || payload.as_object().size() != 1) return std::nullopt;
  const Member& flag = payload.as_object().front();
  if (key_name(flag.key) != "training" || !flag.value.is_bool()) return std::nullopt;
  return flag.value.as_bool();
}

std::optional<Value> module_mode(const Value& recorded) {
  const std::optional<bool> training = training_flag(recorded);
  if (!training) return std::nullopt;
  return module_mode_value(*training);
}

Value module_mode_value(bool training) {
  return make_object({{kModuleTypeName, make_object({{"training", Value::boolean(training)}})}});
}

const Value* recorded_self(const Record& pre) {
  const WellKnownKeys& k = keys();
  const Value* bound = pre.get(k.is_bound_method);
  if (bound == nullptr || !bound->is_bool() || !bound->as_bool()) return nullptr;
  const Value* args = pre.get(k.args);
  return args != nullptr && args->is_object() ? args->find("0") : nullptr;
}

std::optional<bool> self_mode(const Record& pre) {
  const Value* self = recorded_self(pre);
  return self != nullptr ? training_flag(*self) : std::nullopt;
}

}  // namespace traincheck
