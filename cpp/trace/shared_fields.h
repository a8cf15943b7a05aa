// Fields that many records of a file have in common, stored once.
//
// A trace repeats itself: every record of a file carries the same process and thread ids, and each
// record of one function or variable the same type, stage, names, dtype and flags. Those fields are kept
// in one shared, immutable block (a Value object, sorted by key) that the records point to; a record
// keeps only what is its own (numbers such as time, step and digests, call ids, arguments). This halves
// a record's field array on the collector's traces (bench/memory_bench).
//
// Which fields are shared is learnt per file and key, never from field names, so it works for any trace:
// a key whose values keep repeating (ids, names, flags, shapes, an object's id, argument summaries) is
// shared; a key seen with more than kMaxDistinct values (times, steps, digests) stays with each record
// from then on, and a call id always does. Sharing changes no lookup: Record::get and
// Record::for_each_field see one set of fields either way.
#pragma once

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "trace/record.h"

namespace traincheck {

class SharedFieldBlocks {
 public:
  static constexpr size_t kMaxDistinct = 256;

  // Moves the shareable fields of `record.fields` (sorted by key) into a shared block set as
  // `record.shared_fields`, and leaves the rest in `record.fields` at exact capacity. Returns the old
  // field vector, emptied, for its capacity (the reader parses the next line into it).
  std::vector<Field> split(Record& record);

  // The keys found to vary too much to share, and a start from those found elsewhere in the same file
  // (the reader's later pieces of a file start from its first piece's).
  std::vector<KeyId> varying_keys() const;
  void assume_varying(const std::vector<KeyId>& keys);

 private:
  bool shareable(const Field& f);
  struct KeyValues;
  KeyValues& values_of(KeyId key);
  // Whether `shared` holds the very fields of `block` (same keys, kinds and values, arrays and objects
  // by payload): the test the content key stands for.
  static bool same_content(const std::vector<Field>& shared, const Value& block);

  // Per key: the fingerprints of the values seen so far, until there are too many (then `varies`).
  struct KeyValues {
    bool varies = false;
    bool has_last = false;
    ValueKind last_kind = ValueKind::Null;  // the latest value (kind and bits or payload): records mostly
    uint64_t last_bits = 0;                 // repeat their predecessor's, already counted
    std::unordered_set<uint64_t> seen;
  };
  const KeyId func_call_id_ = keys().func_call_id;
  std::vector<uint32_t> slot_of_key_;  // KeyId -> position in keys_ + 1 (0: not seen yet)
  std::vector<KeyValues> keys_;
  std::unordered_map<std::string, Value> blocks_;  // exact content key -> block
  // Blocks found lately, by a hash of their fields' identities (shared payloads, scalar bits): a file's
  // records cycle through a few dozen blocks (one per function or variable), so most find theirs here
  // without building and hashing the content key. Only a confirmed equal content is taken.
  static constexpr size_t kRecentBlocks = 256;
  struct RecentBlock {
    uint64_t hash = 0;
    Value block;
  };
  std::vector<RecentBlock> recent_ = std::vector<RecentBlock>(kRecentBlocks);
  std::string key_;
  std::vector<Field> own_, shared_;
};

}  // namespace traincheck
