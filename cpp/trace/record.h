// One trace record (docs/formats.md §Trace records): an API pre/post/exception record or a variable state
// record, with its fields flattened the way the original's reader flattens them
// (docs/formats.md §Reading traces): nested objects become dotted keys ("meta_vars.step", "attributes.data",
// "meta_vars.context_managers.X"), except `args`, `kwargs` and `return_values`, which stay nested; empty
// objects stay values.
//
// The handful of fields every index needs are also cached in typed members (views into the fields'
// shared string payloads, which never move).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/key_table.h"
#include "trace/value.h"

namespace traincheck {

enum class RecordType : uint8_t { FunctionPre, FunctionPost, FunctionException, StateChange };

std::string_view record_type_name(RecordType t);  // the original's "type" strings
std::optional<RecordType> parse_record_type(std::string_view s);

struct Field {
  KeyId key;
  Value value;
};

class Record {
 public:
  RecordType type = RecordType::FunctionPre;
  int64_t process_id = 0;
  int64_t thread_id = 0;
  int64_t time = 0;
  bool has_step = false;
  int64_t step = 0;
  uint32_t file = 0;  // index into TraceStore::files()
  uint32_t line = 0;  // 1-based line in that file
  std::string_view function;      // API records
  std::string_view func_call_id;  // API records
  std::string_view var_name;      // state records
  std::string_view var_type;      // state records
  std::string_view stage;         // meta_vars.stage ("init" when the trace had none)
  std::vector<Field> fields;      // sorted by key

  bool is_api() const { return type != RecordType::StateChange; }

  const Value* get(KeyId key) const;
  const Value* get(std::string_view flat_key) const;

  // Inserts or replaces a field, keeping the order. Call refresh_cached() after changing cached ones.
  void set(KeyId key, Value value);
  // Recomputes the typed members from `fields`.
  void refresh_cached();

  // The record as a flat JSON object (keys as read, in name order; used in checker outputs).
  Value to_value() const;
};

// Flattens a parsed JSON object into record fields (sorted), following the rules above.
void flatten_record_object(const Value& object, std::vector<Field>& out);

}  // namespace traincheck
