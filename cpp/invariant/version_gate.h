// Which invariants a run checks, by the library versions it ran on (docs/formats.md §Invariant files).
//
// An invariant about how a library is implemented holds on the versions it was vetted on
// (Invariant::vetted_on, written by traincheck-vet). On another version it is not checked: it is counted
// as not checked, with one line saying why, rather than raising alarms a new release's internals cause.
// An invariant without vetted_on, or a run whose version of a library is unknown, is checked.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "invariant/invariant.h"

namespace traincheck {

// Library -> version as installed ("torch" -> "2.5.1+cpu"). Names are lower case, '_' written '-'.
using LibraryVersions = std::map<std::string, std::string>;

// The release series a version belongs to: "2.13" of "2.13.0+cpu", "2.13.0a0" and "2.13"; the text
// itself when it has no dot.
std::string version_series(std::string_view version);
// A distribution name as LibraryVersions keys it: "PyYAML" -> "pyyaml", "typing_extensions" -> "typing-extensions".
std::string library_key(std::string_view name);

// The "Library Versions:" section of a collected run's env_dump.txt ("<name> <version>" lines); empty when
// the file is absent or has no such section.
LibraryVersions read_env_dump_versions(const std::string& env_dump_path);
// From a JSON object {"torch": "2.5.1", ...} (what the collector hands the in-process checker). Throws
// std::invalid_argument on anything else.
LibraryVersions library_versions_from_json(std::string_view json);

struct VersionGate {
  std::vector<bool> skipped;  // per invariant: not checked on this run's versions
  size_t count = 0;           // how many are
  // One line, "" when none is skipped: "12 invariants vetted on torch 2.13 not checked on torch 2.5.1".
  std::string note;
};
VersionGate gate_by_version(const std::vector<Invariant>& invariants, const LibraryVersions& running);

}  // namespace traincheck
