// Function signatures recorded by the collector (api_signatures.json in the trace folder), so the
// analyzer can bind positional arguments to parameter names without importing torch. Format:
// docs/formats.md §api_signatures.json.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <set>
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

  // The APIs whose calls bind() had to name by position for want of a signature (they had positional
  // arguments, or defaults were asked for) and that still have none: what a checker says it lacked, once
  // (api_signatures.json missing, not yet written, or from another run). Sorted. Thread-safe.
  std::vector<std::string> missing() const;

 private:
  // `line_of_member(i)`: the line of the root object's i-th member (0: unknown), for messages.
  static ApiSignatures from_value_at(const Value& root, const std::string& source,
                                     const std::function<size_t(size_t)>& line_of_member);
  void note_missing(std::string_view api) const;

  std::unordered_map<std::string, std::vector<SignatureParam>> table_;
  // Shared by copies: the checks bind through the copy the store or checker holds.
  struct MissLog {
    std::mutex mutex;
    std::set<std::string, std::less<>> names;
  };
  std::shared_ptr<MissLog> misses_ = std::make_shared<MissLog>();
};

// The one-line note about ApiSignatures::missing() names (console-safe, the first few named).
std::string missing_signatures_message(const std::vector<std::string>& names);
// "N APIs have no signature (builtins, named by position as at inference): <names>", for the APIs left
// without one once api_signatures.json was read.
std::string builtin_signatures_message(const std::vector<std::string>& names);

}  // namespace traincheck
