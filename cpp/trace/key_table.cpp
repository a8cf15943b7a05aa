#include "trace/key_table.h"

#include "trace/interned_strings.h"

namespace traincheck {
namespace {

InternedStrings& table() {
  static InternedStrings* t = new InternedStrings();  // never destroyed: ids may be used during static destruction
  return *t;
}

}  // namespace

std::string canonical_key_name(std::string_view name) {
  std::string out(name);
  size_t pos = 0;
  while ((pos = out.find(kLegacyToolPrefix, pos)) != std::string::npos) {
    out.replace(pos, kLegacyToolPrefix.size(), kToolPrefix);
    pos += kToolPrefix.size();
  }
  return out;
}

namespace {

// `raw` with the legacy prefix folded (into `buffer`, which then holds the text) when it has one.
std::string_view folded_key(std::string_view raw, std::string& buffer) {
  if (raw.find(kLegacyToolPrefix) == std::string_view::npos) return raw;
  buffer = canonical_key_name(raw);
  return buffer;
}

}  // namespace

std::optional<KeyId> find_key(std::string_view raw) {
  std::string folded;
  return table().find(folded_key(raw, folded));
}

KeyId intern_key(std::string_view raw) {
  std::string folded;
  return table().intern(folded_key(raw, folded));
}

std::string_view key_name(KeyId id) { return table().text(id); }

const WellKnownKeys& keys() {
  static const WellKnownKeys k{
      intern_key("func_call_id"),    intern_key("thread_id"),       intern_key("process_id"),
      intern_key("meta_vars.step"),  intern_key("meta_vars.stage"), intern_key("type"),
      intern_key("function"),        intern_key("is_bound_method"), intern_key("obj_id"),
      intern_key("args"),            intern_key("kwargs"),          intern_key("return_values"),
      intern_key("exception"),       intern_key("exception_msg"),   intern_key("time"),
      intern_key("var_name"),        intern_key("var_type"),        intern_key("mode"),
      intern_key("dump_loc"),        intern_key("proxy_obj_names"), intern_key("stack_trace"),
      intern_key("compiled")};
  return k;
}

}  // namespace traincheck
