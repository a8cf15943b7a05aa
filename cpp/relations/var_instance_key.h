// A variable instance's identity in a check's hash maps: (process, var_name, var_type), the names as their
// interned ids, so a lookup per state record compares integers, not names (a model's parameters are
// recorded every step). Used by the Consistency and APIContain checks.
#pragma once

#include <cstdint>
#include <functional>

#include "trace/record.h"

namespace traincheck {

struct VarInstanceKey {
  int64_t process_id;
  uint32_t var_name, var_type;
  static VarInstanceKey of(const Record& r) { return {r.process_id, r.var_name.id(), r.var_type.id()}; }
  bool operator==(const VarInstanceKey&) const = default;
};

struct VarInstanceKeyHash {
  size_t operator()(const VarInstanceKey& k) const {
    return std::hash<uint64_t>{}(static_cast<uint64_t>(k.process_id) * 0x9E3779B97F4A7C15ULL ^
                                 (static_cast<uint64_t>(k.var_name) << 32 | k.var_type));
  }
};

}  // namespace traincheck
