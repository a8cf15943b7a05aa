// A call's key in an online check's table of open calls: a 64-bit hash of its func_call_id. The ids
// are long strings (47 bytes in our traces), so keying by the string cost an allocation per record; the
// calls open at once on a thread are few (nesting depth), so two of them sharing a key is as likely as
// two random 64-bit numbers meeting (checks that keep the pre-record compare the ids too).
#pragma once

#include <cstdint>
#include <string_view>

#include "common/short_text_hash.h"
#include "trace/record.h"

namespace traincheck {

inline uint64_t call_key(const Record& r) { return short_text_hash(r.func_call_id()); }

}  // namespace traincheck
