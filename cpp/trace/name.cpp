#include "trace/name.h"

#include "trace/interned_strings.h"

namespace traincheck {

namespace {

InternedStrings& names() {
  static InternedStrings* t = [] {
    auto* table = new InternedStrings();  // never destroyed: names may be read during static destruction
    table->intern("");                    // id 0, the default Name
    return table;
  }();
  return *t;
}

}  // namespace

Name::Name(std::string_view text) : id_(names().intern(text)) {}

std::string_view Name::view() const { return names().text(id_); }

const std::string& Name::str() const { return names().str(id_); }

Name Name::of(const Value* v) {
  if (v == nullptr || !v->is_string()) return Name();
  // The payload keeps its id once any record sharing it was named (the reader shares a file's repeated
  // strings: a model's 50k parameter names, repeated every step, are hashed and looked up once each, not
  // once per record).
  Name name;
  name.id_ = v->cached_name_id();
  if (name.id_ == 0) {
    name = Name(v->as_string());
    v->cache_name_id(name.id_);
  }
  return name;
}

}  // namespace traincheck
