// libFuzzer target: the trace reader on arbitrary bytes.
//
// The input is parsed twice, through the reader's two public entry points: as one trace line
// (parse_trace_line, what the online checker calls per line) and as a whole file (read_trace_text, the
// offline reader's line splitting, damage policy and warnings). Either must accept the input or reject it
// with a message; anything else (a crash, a sanitizer report, an exception other than TraceReadError)
// is a finding.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include "finding.h"
#include "trace/json_parse.h"
#include "trace/record.h"
#include "trace/trace_reader.h"
#include "trace/value.h"

using namespace traincheck;

namespace {

void check_line(const std::string& text) {
  static JsonParser parser;  // reused across inputs, as the online checker reuses its own
  std::string buffer = text;
  buffer.append(kJsonPadding, '\0');  // parse_trace_line reads up to kJsonPadding bytes past the line
  Record record;
  std::string error;
  if (!parse_trace_line(parser, buffer.data(), text.size(), record, error)) {
    if (error.empty()) fail("parse_trace_line rejected a line without saying why");
    return;
  }
  // An accepted line has the fields every index relies on, as strings its cached names hold, and can be
  // written out (failed.log does).
  auto names_field = [&](Name name, KeyId key) {
    const Value* v = record.get(key);
    return v != nullptr && v->is_string() && name == std::string_view(v->as_string());
  };
  if (!names_field(record.stage, keys().meta_vars_stage)) fail("accepted record without a stage");
  if (record.is_api() ? !names_field(record.function, keys().function) : !names_field(record.var_name, keys().var_name))
    fail("accepted record without its function or var_name");
  (void)to_json(record.to_value());
}

void check_file(const std::string& text) {
  std::ostringstream warnings;
  ReadOptions options;
  options.warnings = &warnings;
  options.threads = 1;
  try {
    RawTrace trace = read_trace_text("fuzz.log", text, options);
    for (const Record& r : trace.records)
      if (r.line == 0 || r.file != 0) fail("record without its file and line");
  } catch (const TraceReadError& e) {
    if (e.file() != "fuzz.log") fail("TraceReadError does not name the file");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  check_line(text);
  check_file(text);
  return 0;
}
