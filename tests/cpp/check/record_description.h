// A record as comparable text, for tests that hold two ways of reading a line side by side: its
// cached members, then every field in key order with its value's kind and JSON.
#pragma once

#include <string>

#include "trace/record.h"
#include "trace/value.h"

namespace traincheck {

inline std::string describe_record(const Record& r) {
  std::string out = std::string(record_type_name(r.type)) + " pid=" + std::to_string(r.process_id) +
                    " tid=" + std::to_string(r.thread_id) + " time=" + std::to_string(r.time) +
                    " step=" + (r.has_step ? std::to_string(r.step) : "none") + " name=" + r.var_name.str() +
                    " type=" + r.var_type.str() + " stage=" + r.stage.str() + " fn=" + r.function.str() + "\n";
  r.for_each_field([&](const Field& f) {
    out += std::string(key_name(f.key)) + " kind=" + std::to_string(static_cast<int>(f.value.kind())) + " = ";
    append_value_json(out, f.value);
    out += '\n';
  });
  return out;
}

}  // namespace traincheck
