// Interned field names.
//
// Trace records repeat the same few hundred keys ("meta_vars.step", "attributes.data", "dtype", ...)
// millions of times, so records store a 32-bit KeyId instead of the text. The table is process-wide and
// append-only: ids are stable for the life of the process and lookups by id take no lock.
//
// Both historical spellings of the tool's private attribute prefix are folded into one key: a name
// containing "_ML_DAIKON_" is interned as the same id as its "_TRAINCHECK_" spelling
// (docs/formats.md §Reading traces), so old traces, new traces and invariant files of either era match each
// other field for field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace traincheck {

using KeyId = uint32_t;
inline constexpr KeyId kNoKey = 0xFFFFFFFFu;

// Returns the id of `name` (after legacy-prefix folding), adding it if new. Thread-safe.
KeyId intern_key(std::string_view name);

// The id of `name` if it was ever interned; never adds. Thread-safe.
std::optional<KeyId> find_key(std::string_view name);

// The canonical text of a key (with the "_TRAINCHECK_" spelling). Lock-free; the view lives forever.
std::string_view key_name(KeyId id);

// "_ML_DAIKON_x" -> "_TRAINCHECK_x"; other names unchanged.
std::string canonical_key_name(std::string_view name);

// The prefix of the attributes the tool itself adds (object ids such as "_TRAINCHECK_data_ID"), and the
// original's legacy spelling of it, which intern_key folds into the first.
inline constexpr std::string_view kToolPrefix = "_TRAINCHECK_";
inline constexpr std::string_view kLegacyToolPrefix = "_ML_DAIKON_";
// Whether `name` is one of the tool's own attributes: ids that differ run to run, never a hypothesis or a
// compared value. A key's name can only have kToolPrefix; raw text (an invariant file's) may have either.
inline bool is_tool_attribute(std::string_view name) {
  return name.starts_with(kToolPrefix) || name.starts_with(kLegacyToolPrefix);
}

// Whether a flattened record key names the process that wrote the record rather than what it recorded:
// its process, thread, time and data-parallel rank, and the tool's own attributes (a tensor's data
// address, `attributes._TRAINCHECK_data_ID`). Replicas in sync differ only there (the cross-rank
// exchange's step digests leave them out; a Consistency pair of two ranks' twins differs on them).
inline bool is_rank_identity_key(std::string_view flat_key) {
  if (flat_key == "process_id" || flat_key == "thread_id" || flat_key == "time" || flat_key == "meta_vars._DATA_PARALLEL_RANK")
    return true;
  const size_t dot = flat_key.rfind('.');
  return is_tool_attribute(dot == std::string_view::npos ? flat_key : flat_key.substr(dot + 1));
}

// Keys the analyzer looks up on every record, interned once.
struct WellKnownKeys {
  KeyId func_call_id, thread_id, process_id, meta_vars_step, meta_vars_stage, type, function,
      is_bound_method, obj_id, args, kwargs, return_values, exception, exception_msg, time, var_name,
      var_type, mode, dump_loc, proxy_obj_names, stack_trace, compiled;
};
const WellKnownKeys& keys();

}  // namespace traincheck
