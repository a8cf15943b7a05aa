// What a variable state is (docs/analysis.md §Trace model), defined once for the trace store's index
// (TraceStore::index_vars, trace_store_vars.cpp) and the online checks that follow variables record by
// record (APIContain's var-change children, Consistency).
//
// A variable is (process, var_name, var_type); its state records carry its attributes as fields
// "attributes.<name>". A recorded value of an attribute forms a state unless the attribute is untracked
// or the value is NaN; a state lasts while the recorded values equal it, and a different value starts
// the next one (a change, from the previous state's value to the new one).
#pragma once

#include <string_view>

#include "trace/record.h"
#include "trace/value.h"

namespace traincheck {

inline constexpr std::string_view kAttributeFieldPrefix = "attributes.";

// True for attributes the original never tracks as variable state: is_*/has_*/can_* properties and
// the tool's own "_TRAINCHECK_*" (also legacy "_ML_DAIKON_*") id attributes (docs/analysis.md §Trace model, docs/differences.md §Trace reading).
bool is_untracked_attribute(std::string_view attr_name);

// Whether a recorded value of attribute `attr_name` forms a state.
inline bool is_state_value(std::string_view attr_name, const Value& value) {
  return !is_untracked_attribute(attr_name) && !value.is_nan();
}

// The value of the attribute field `attr_key` of a state record when it forms a state; nullptr when the
// record lacks it or it is NaN. (Whether the attribute is tracked at all is the caller's, asked once.)
inline const Value* state_value(const Record& record, KeyId attr_key) {
  const Value* v = record.get(attr_key);
  return v == nullptr || v->is_nan() ? nullptr : v;
}

// Whether `recorded` starts a new state of an attribute whose current state holds `current` (nullptr:
// none yet, so it starts the first).
inline bool starts_new_state(const Value* current, const Value& recorded) {
  return current == nullptr || !(*current == recorded);
}

}  // namespace traincheck
