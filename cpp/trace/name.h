// The names a record is indexed by (its function, variable name and type, stage), interned.
//
// A trace repeats a few hundred such names over millions of records, so a record keeps each as a 4-byte
// id into one process-wide table (interned_strings.h) instead of a 16-byte view: a quarter of a record's
// size (bench/memory_bench). The table only grows; a long online run adds each new name once.
//
// Invariant params (invariant/param.h) hold their names as Names too: inference makes a hypothesis per
// pair of functions or variables, and a 4 KB name copied into each of them made its memory grow as
// name length x pairs; a Name is 4 bytes however long its text.
#pragma once

#include <compare>
#include <cstdint>
#include <string_view>

#include "trace/value.h"

namespace traincheck {

class Name {
 public:
  Name() = default;  // the empty name
  explicit Name(std::string_view text);
  // The name a string value holds (the empty name for anything else). Cheap for a value whose payload
  // was named before (it keeps its id: Value::cached_name_id), as a file's repeated names are (the
  // reader shares their payloads).
  static Name of(const Value* v);

  std::string_view view() const;
  const std::string& str() const;  // the same text; lives as long as the process
  operator std::string_view() const { return view(); }
  operator const std::string&() const { return str(); }
  bool empty() const { return id_ == 0; }

  friend bool operator==(Name a, Name b) { return a.id_ == b.id_; }
  friend bool operator==(Name a, std::string_view b) { return a.view() == b; }
  friend auto operator<=>(Name a, std::string_view b) { return a.view() <=> b; }
  // Names order by their text (a std::set<Name> iterates as a set of strings would).
  friend auto operator<=>(Name a, Name b) { return a.view() <=> b.view(); }
  uint32_t id() const { return id_; }  // dense, stable for the process: equal ids, equal texts

 private:
  uint32_t id_ = 0;  // id 0 is ""
};
static_assert(sizeof(Name) == 4);

}  // namespace traincheck
