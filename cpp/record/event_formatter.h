// Turns binary events into the original's JSON trace records
// (docs/formats.md §API records, §Argument and return values). Runs on the writer thread: no Python, no GIL.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "record/string_table.h"

namespace traincheck {

struct FormatContext {
  const StringTable& names;  // API names, type names, dtype names
  const StringTable& metas;  // meta_vars snapshots, each a JSON object text
  uint64_t process_id;
  uint64_t thread_id;
  std::string_view call_uuid;  // 32 hex digits
};

// Appends one JSON line (with its trailing newline) for the event at `event`.
void format_event(std::string& out, const std::byte* event, const FormatContext& ctx);

// The original's tensor type name for a dtype and device: torch.float32 on CUDA -> torch.cuda.FloatTensor.
std::string tensor_type_name(std::string_view dtype_name, bool is_cuda);

}  // namespace traincheck
