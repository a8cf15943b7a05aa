// libFuzzer target: the api_signatures.json reader and argument binding.
//
// The input is read as ApiSignatures::load reads a file (parse_json, then ApiSignatures::from_value);
// a table that loads is then used to bind the arguments of a fixed pre-call record for each API it
// names, as the trace store does. A malformed file must give TraceReadError; anything else (a crash, a
// sanitizer report, another exception) is a finding.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "trace/api_signatures.h"
#include "trace/json_parse.h"
#include "trace/record.h"
#include "trace/trace_reader.h"
#include "trace/value.h"

using namespace traincheck;

namespace {

// A pre-call record of `function` with positional arguments 0..3 (out of order, as a trace may hold
// them) and one keyword argument, as a bound method.
Record pre_call(const std::string& function) {
  auto arg = [](int64_t i) { return make_object({{"int", Value::integer(i)}}); };
  const Value object = make_object({
      {"type", Value::string("function_call (pre)")},
      {"function", Value::string(function)},
      {"func_call_id", Value::string("fuzz")},
      {"is_bound_method", Value::boolean(true)},
      {"args", make_object({{"2", arg(2)}, {"0", arg(0)}, {"1", arg(1)}, {"x", arg(9)}, {"3", arg(3)}})},
      {"kwargs", make_object({{"alpha", arg(4)}, {"self", arg(5)}})},
  });
  Record r;
  flatten_record_object(object, r.fields);
  r.refresh_cached();
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Value root;
  std::string error;
  if (!parse_json(text, root, error)) return 0;
  ApiSignatures signatures;
  try {
    signatures = ApiSignatures::from_value(root, "api_signatures.json");
  } catch (const TraceReadError&) {
    return 0;
  }
  for (const Member& api : root.as_object()) {
    const Record pre = pre_call(std::string(key_name(api.key)));
    if (signatures.find(pre.function) == nullptr) std::abort();  // every API of the file is in the table
    for (bool skip_self : {false, true})
      for (bool with_defaults : {false, true}) (void)signatures.bind(pre, skip_self, with_defaults);
  }
  return 0;
}
