// Fields that many records of a file have in common, stored once.
//
// A trace repeats itself: every record of a file carries the same process and thread ids, and each
// record of one function or variable the same type, stage, names, dtype and flags. Those fields are kept
// in one shared, immutable block (a Value object, sorted by key) that the records point to; a record
// keeps only what is its own (numbers such as time, step and digests, call ids, arguments). This halves
// a record's field array on the collector's traces (bench/memory_bench).
//
// Which fields are shared is decided by value kind, never by field name, so it works for any trace:
// strings, booleans and nulls (and the process/thread ids) are shareable; numbers, arrays, objects and
// call ids stay with the record. Sharing changes no lookup: Record::get and Record::for_each_field see
// one set of fields either way.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "trace/record.h"

namespace traincheck {

class SharedFieldBlocks {
 public:
  // Moves the shareable fields of `record.fields` (sorted by key) into a shared block set as
  // `record.shared_fields`, and leaves the rest in `record.fields` at exact capacity. Returns the old
  // field vector, emptied, for its capacity (the reader parses the next line into it).
  std::vector<Field> split(Record& record);

 private:
  static bool shareable(const Field& f);
  std::unordered_map<std::string, Value> blocks_;  // exact content key -> block
  std::string key_;
  std::vector<Field> own_, shared_;
};

}  // namespace traincheck
