// Function signatures recorded by the collector (api_signatures.json in the trace folder), so the
// analyzer can bind positional arguments to parameter names without importing torch. Format:
// docs/formats.md §api_signatures.json.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "trace/record.h"
#include "trace/value.h"

namespace traincheck {

struct SignatureParam {
  std::string name;
  std::string kind = "POSITIONAL_OR_KEYWORD";  // inspect.Parameter kind names
  std::optional<Value> default_value;          // absent: no default
};

class ApiSignatures {
 public:
  // Loads `path`; a missing file is not an error (returns an empty table). Throws TraceReadError on a
  // malformed file.
  static ApiSignatures load(const std::string& path);
  // `source` names the origin in messages (no line numbers: the text is not known here).
  static ApiSignatures from_value(const Value& root, const std::string& source);

  bool empty() const { return table_.empty(); }
  const std::vector<SignatureParam>* find(std::string_view api) const;
  void merge(const ApiSignatures& other);

  // The arguments of an API pre-record as {name: value}. Positional arg i is named after the
  // signature's parameter i when there is one, whatever its kind, as the original does (the first
  // argument caught by *args is "args"); beyond the signature, or without one, it keeps its index as
  // the name. kwargs keep their names. `self`
  // (positional 0 of a bound method) is left out when `skip_self`. With `with_defaults`, parameters
  // not passed get their recorded default. Values are kept as recorded ({type: payload}).
  Object bind(const Record& pre, bool skip_self, bool with_defaults) const;

 private:
  // `line_of_member(i)`: the line of the root object's i-th member (0: unknown), for messages.
  static ApiSignatures from_value_at(const Value& root, const std::string& source,
                                     const std::function<size_t(size_t)>& line_of_member);
  std::unordered_map<std::string, std::vector<SignatureParam>> table_;
};

}  // namespace traincheck
