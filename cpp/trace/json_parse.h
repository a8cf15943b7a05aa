// JSON text -> Value / record fields. The only translation unit that includes simdjson.
//
// Lines written by Python's stdlib json may contain the non-standard literals NaN, Infinity and
// -Infinity (docs/formats.md §Reading traces). simdjson rejects them, so a line that fails to parse is
// retried once with those literals (outside strings) rewritten; they come back as Double NaN / ±inf.
#pragma once

#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trace/record.h"
#include "trace/value.h"

namespace traincheck {

// Bytes that must be readable after the end of a buffer handed to parse_*_padded (simdjson's padding).
inline constexpr size_t kJsonPadding = 64;

// A reusable parser; one per thread (not thread-safe). Caches interned keys and repeated short
// strings, so records of one file share their function names, stages and dtype strings.
// Whether `text` is valid UTF-8 (simdjson's validator: many bytes per cycle), for lines checked without
// being parsed.
bool valid_utf8(std::string_view text);

class JsonParser {
 public:
  JsonParser();
  ~JsonParser();
  JsonParser(const JsonParser&) = delete;
  JsonParser& operator=(const JsonParser&) = delete;

  // Parses any JSON document. On failure returns false and sets `error` (simdjson's message).
  bool parse(std::string_view text, Value& out, std::string& error);

  // Parses one trace line (an object) straight into flattened, sorted record fields (record.h).
  // `data` must have kJsonPadding readable bytes after `len`.
  bool parse_record_padded(const char* data, size_t len, std::vector<Field>& fields, std::string& error);

  // A string Value of `s`, sharing its payload with the strings of the same text this parser made
  // before (its caches): for records read from another encoding (trace/record_frames.h), whose
  // names then come with their interned ids like parsed ones.
  Value string_value(std::string_view s);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Convenience for one-off documents (invariant lines, small config files).
bool parse_json(std::string_view text, Value& out, std::string& error);

// Line and column (both 1-based) of byte `offset` of `text`, for messages about small JSON files.
struct TextPosition {
  size_t line = 1;
  size_t column = 1;
};
TextPosition text_position(std::string_view text, size_t offset);

// Where a document that parse_json rejects goes wrong: the byte offset at which simdjson's on-demand
// walk of `text` fails, or npos when that walk cannot say (an unclosed string, say) or finds no error.
size_t json_error_offset(std::string_view text);

// The byte offsets of the keys (their opening quote) of the top-level object's members, in document
// order; empty when `text` is not a valid object. parse_json's Object keeps the same order.
std::vector<size_t> json_member_offsets(std::string_view text);

// Opens a plain file for reading; false (with `error`) for a folder, a FIFO or device, or a file that
// cannot be opened.
bool open_plain_file(const std::string& path, std::ifstream& in, std::string& error);

// Reads a whole file; false (with `error`) if it cannot be read.
bool read_file(const std::string& path, std::string& out, std::string& error);

}  // namespace traincheck
