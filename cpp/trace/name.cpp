#include "trace/name.h"

#include <array>

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
  // Per thread, the payloads last named: the reader shares a file's repeated strings, so most records'
  // names are found here without hashing their text or taking the table's lock. A slot is trusted only
  // if its text still matches (a freed payload's address may come back holding another string).
  struct Slot {
    const void* payload = nullptr;
    Name name;
  };
  thread_local std::array<Slot, 256> recent;
  const void* payload = v->payload_id();
  Slot& slot = recent[(reinterpret_cast<uintptr_t>(payload) * 0x9E3779B97F4A7C15ULL) >> 56];
  const std::string& text = v->as_string();
  if (slot.payload == payload && slot.name.view() == text) return slot.name;
  slot = {payload, Name(text)};
  return slot.name;
}

}  // namespace traincheck
