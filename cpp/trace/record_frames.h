// Trace records in a binary form: the cross-rank exchange's summaries of a rank's steps
// (check/online/cross_rank_exchange.h, docs/analysis.md §Cross-rank checking in-process), in which each
// variable the checks compare across ranks has its last record of the step, reduced to its identity and
// the fields the checks read.
//
// Binary, not JSON: a rank writes one record per parameter every step and reads one per parameter and
// peer, on the recorder's writer thread. As JSON lines, writing and reading one cost more than checking
// it (bench/consistency_scale.py; latest figures in bench/README.md); here a value
// is copied, never printed or parsed, and a float field keeps its bits (JSON wrote NaN as null; inside an
// array or object it still does, as those travel as JSON).
//
// A sequence of frames, each a kind byte and a 4-byte length (host byte order: the ranks of a job run one
// build on one architecture), then that many bytes:
// - 'K' keys: u16 count, then per key a u16 length and the flattened field name ("attributes.data"):
//   what the record frames after it index. A sequence starts with one, and so does each chunk of one
//   (chunk_record_frames), so a chunk reads alone (one deleted before it was read loses its records only).
// - 'R' record: u16 field count, then per field a u16 key index and a value: a tag byte, then nothing
//   (null, false, true), 8 bytes (int64, double), or a u32 length and bytes (a string; any other value,
//   an array or an object, as compact JSON).
// Bytes from another process are untrusted: the decoder refuses what is malformed, saying where
// (fuzz/record_frames_fuzzer.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trace/json_parse.h"
#include "trace/key_table.h"
#include "trace/record.h"

namespace traincheck {

// Writes record frames of the fields in `kept` (the rest of a record is left out).
class RecordFrameEncoder {
 public:
  explicit RecordFrameEncoder(const std::vector<KeyId>& kept);
  // The 'K' frame every sequence (and every chunk of one) starts with.
  const std::string& key_frame() const { return key_frame_; }
  // Appends the record's 'R' frame.
  void append_record(std::string& out, const Record& record) const;
  // Appends the encoded fields among [begin, end) that are kept; returns how many.
  uint16_t append_fields(std::string& out, const Field* begin, const Field* end) const;
  // Appends an 'R' frame of the kept fields among [begin, end), then `encoded`: `encoded_count` more
  // fields as append_fields wrote them (a record's shared fields, encoded once; the decoder orders a
  // frame's fields itself).
  void append_frame(std::string& out, const Field* begin, const Field* end, std::string_view encoded, uint16_t encoded_count) const;

 private:
  std::vector<int32_t> index_of_;  // by KeyId: its index in the key frame, -1 when not kept
  std::string key_frame_;
};

// Cuts a sequence (a key frame, then record frames) into pieces of at most `max_bytes`, at frame
// boundaries, each starting with the sequence's key frame. A record frame that does not fit in a piece
// alone is left out and counted in `too_large`.
std::vector<std::string> chunk_record_frames(std::string_view frames, size_t max_bytes, uint64_t& too_large);

// The number of record frames in a sequence (stops at a malformed frame).
size_t count_record_frames(std::string_view frames);

// Reads frames back into records, under the trace reader's rules (required fields, stage default).
// Keeps one JsonParser for the run: a string shares its payload with the earlier ones of the same text,
// so a model's names are allocated once, not once per step and peer.
class RecordFrameDecoder {
 public:
  // Appends the records of a sequence to `out`; false, with `error` (what and at which byte, of the first
  // one), when some frame was malformed or some record invalid. A refused record is skipped and the next
  // frame read (its length says where it starts); a frame whose kind or length cannot be read ends the
  // sequence, and records after a refused key frame wait for the next one.
  bool decode(std::string_view frames, std::vector<Record>& out, std::string& error);

 private:
  bool read_keys(std::string_view frame, std::string& error);
  bool read_record(std::string_view frame, Record& out, std::string& error);
  JsonParser parser_;
  std::string key_frame_;  // the last key frame read (a count at least: never empty once read), and its keys
  std::vector<KeyId> keys_;
  std::vector<Value> last_string_;  // per key: the last string read under it
};

}  // namespace traincheck
