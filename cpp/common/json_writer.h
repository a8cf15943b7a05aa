// JSON text output shared by the recorder's writer thread and the analyzer's result writers.
//
// Output matches what the original tool's orjson path writes, so either tool reads the other's files:
// compact separators, floats in shortest round-trip form with a ".0" kept on integral values
// (1.0, not 1), and NaN / Infinity written as null (orjson's behaviour; see docs/formats.md §JSON text).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace traincheck {

// Appends `text` as a quoted JSON string, escaping quotes, backslashes and control characters.
// Bytes >= 0x80 are copied unchanged (the input is UTF-8).
void append_json_string(std::string& out, std::string_view text);

void append_json_int(std::string& out, int64_t value);
void append_json_uint(std::string& out, uint64_t value);

// Shortest representation that parses back to the same double; NaN and infinities become null.
void append_json_double(std::string& out, double value);

inline void append_json_bool(std::string& out, bool value) { out += value ? "true" : "false"; }

}  // namespace traincheck
