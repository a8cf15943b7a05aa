// libFuzzer target: the invariant codec (one line of an invariants file).
//
// Decoding either throws InvariantFormatError or yields an invariant; an invariant written back must
// decode to the same invariant and the same line (decode -> encode -> decode -> encode is a fixed point),
// since either tool must read what the other writes (docs/formats.md §Invariant files). Anything else is a
// finding.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "invariant/invariant.h"

using namespace traincheck;

namespace {

[[noreturn]] void fail(const char* what, const std::string& a, const std::string& b) {
  std::fprintf(stderr, "%s\n  first:  %s\n  second: %s\n", what, a.c_str(), b.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Invariant first;
  try {
    first = invariant_from_json(text, "fuzz.json", 1);
  } catch (const InvariantFormatError& e) {
    if (e.file != "fuzz.json" || e.line != 1) fail("InvariantFormatError does not name the file and line", e.what(), "");
    return 0;
  }
  const std::string line = first.to_json_line();
  Invariant second;
  try {
    second = invariant_from_json(line, "written.json", 1);
  } catch (const InvariantFormatError& e) {
    fail("a written invariant does not read back", line, e.what());
  }
  const std::string again = second.to_json_line();
  if (again != line) fail("invariant changed on a round trip", line, again);
  if (second.identity() != first.identity()) fail("identity changed on a round trip", first.identity(), second.identity());
  return 0;
}
