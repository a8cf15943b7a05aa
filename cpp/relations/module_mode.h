// A module's mode as the recorder writes it with every nn.Module argument, {"<type>": {"training": b}}
// (docs/formats.md §Argument and return values), and as invariants constrain it: under the base type
// {"torch.nn.modules.module.Module": {"training": b}}, whatever the module's class, so that a user's
// subclass of Linear is judged as Linear is. Shared by APIContain's argument constraints and
// ModuleModeRelation.
#pragma once

#include <optional>
#include <string_view>

#include "trace/record.h"
#include "trace/value.h"

namespace traincheck {

inline constexpr std::string_view kModuleTypeName = "torch.nn.modules.module.Module";

// The training flag of a recorded module argument, or of its constraint form; nullopt for any other value.
std::optional<bool> training_flag(const Value& recorded);

// The constraint form of a recorded module argument; nullopt for any other value.
std::optional<Value> module_mode(const Value& recorded);

// The constraint form for a mode.
Value module_mode_value(bool training);

// A bound call's recorded `self` (positional argument 0), or null.
const Value* recorded_self(const Record& pre);

// The mode of a bound method's `self` (positional argument 0) in its pre-record; nullopt when the record
// is no bound call, or argument 0 is not a recorded module.
std::optional<bool> self_mode(const Record& pre);

}  // namespace traincheck
