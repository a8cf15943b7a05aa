// One trace record (docs/formats.md §Trace records): an API pre/post/exception record or a variable state
// record, with its fields flattened the way the original's reader flattens them
// (docs/formats.md §Reading traces): nested objects become dotted keys ("meta_vars.step", "attributes.data",
// "meta_vars.context_managers.X"), except `args`, `kwargs` and `return_values`, which stay nested; empty
// objects stay values.
//
// The handful of fields every index needs are also cached in typed members (numbers, and names interned
// as 4-byte ids: trace/name.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/key_table.h"
#include "trace/name.h"
#include "trace/value.h"

namespace traincheck {

enum class RecordType : uint8_t { FunctionPre, FunctionPost, FunctionException, StateChange };

std::string_view record_type_name(RecordType t);  // the original's "type" strings
std::optional<RecordType> parse_record_type(std::string_view s);

// A record field: a flattened key and its value (the same pair as an object member, so a record's
// shared fields can live in a Value object).
using Field = Member;
static_assert(sizeof(Field) == 16, "a field is a key and a 4-aligned Value, unpadded");

// Members are ordered widest first: a trace holds millions of records, and padding is paid per record.
class Record {
 public:
  int64_t process_id = 0;
  int64_t thread_id = 0;
  int64_t time = 0;
  int64_t step = 0;
  std::vector<Field> fields;      // the record's own fields, sorted by key
  Value shared_fields;            // null, or an object of fields shared with other records of its file
                                  // (trace/shared_fields.h), sorted by key; a key in `fields` wins
  Name function;  // API records
  Name var_name;  // state records
  Name var_type;  // state records
  Name stage;     // meta_vars.stage ("init" when the trace had none)
  uint32_t file = 0;  // index into TraceStore::files()
  uint32_t line = 0;  // 1-based line in that file
  RecordType type = RecordType::FunctionPre;
  bool has_step = false;
  // A hint: shared_fields is one field set that many records share (a template's:
  // check/online/var_line_templates.h), so what is derived from it is worth keeping
  // (check/online/shared_fields_memo.h); and no own field has a shared one's key (the template's own
  // fields are those it left out of the set; set() clears the hint when it adds one that shadows), so
  // the fields are the own ones plus the shared ones without looking. Fits in the padding.
  bool shared_fields_common = false;

  bool is_api() const { return type != RecordType::StateChange; }
  // API records; not cached, since every call has its own (a view into the field's payload).
  std::string_view func_call_id() const;

  // Lookups and iteration see own and shared fields as one set.
  const Value* get(KeyId key) const;
  const Value* get(std::string_view flat_key) const;
  // Calls f(const Field&) for every field, in key order. The references stay valid while the record
  // is not changed.
  template <typename F>
  void for_each_field(F&& f) const;

  // Inserts or replaces a field, keeping the order (an own field: one shadowing a shared one clears
  // shared_fields_common). Call refresh_cached() after changing cached ones.
  void set(KeyId key, Value value);

  // Moves the own fields into shared_fields (when it holds none), so that a copy of the record takes one
  // reference instead of copying every field: what a record kept by several checks for steps costs
  // (the online checker's, bench/README.md consistency_scale). Lookups see the same fields.
  void share_fields();
  // Whether an own field has the key of a shared one (set() on a record with shared fields): then the
  // record's fields are not its own ones plus its shared ones.
  bool shadows_shared_fields() const;

  // The fields the typed members come from, found in one pass (nullptr: absent). The pointers stay
  // valid while the record is not changed.
  struct KnownFields {
    const Value *type = nullptr, *process_id = nullptr, *thread_id = nullptr, *time = nullptr, *step = nullptr,
                *function = nullptr, *func_call_id = nullptr, *var_name = nullptr, *var_type = nullptr, *stage = nullptr;
  };
  KnownFields known_fields() const;
  // Recomputes the typed members from the fields (`known`: this record's known_fields()).
  void refresh_cached();
  void refresh_cached(const KnownFields& known);

  // The record as a flat JSON object (keys as read, in name order; used in checker outputs).
  Value to_value() const;
};

template <typename F>
void Record::for_each_field(F&& f) const {
  static const Object kNone;
  const Object& shared = shared_fields.is_object() ? shared_fields.as_object() : kNone;
  auto own = fields.begin();
  auto other = shared.begin();
  while (own != fields.end() || other != shared.end()) {
    if (other == shared.end() || (own != fields.end() && own->key <= other->key)) {
      if (other != shared.end() && own->key == other->key) ++other;  // shadowed
      f(*own++);
    } else {
      f(*other++);
    }
  }
}

// Flattens a parsed JSON object into record fields (sorted), following the rules above.
void flatten_record_object(const Value& object, std::vector<Field>& out);

}  // namespace traincheck
