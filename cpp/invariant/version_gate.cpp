#include "invariant/version_gate.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <stdexcept>

#include "trace/json_parse.h"
#include "trace/key_table.h"

namespace traincheck {

std::string version_series(std::string_view version) {
  const size_t first = version.find('.');
  if (first == std::string_view::npos) return std::string(version);
  size_t end = first + 1;
  while (end < version.size() && version[end] >= '0' && version[end] <= '9') ++end;
  return std::string(version.substr(0, end));
}

std::string library_key(std::string_view name) {
  std::string out(name);
  for (char& c : out) {
    if (c == '_') c = '-';
    else if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

LibraryVersions read_env_dump_versions(const std::string& env_dump_path) {
  LibraryVersions out;
  std::ifstream in(env_dump_path);
  bool in_section = false;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!in_section) {
      in_section = line == "Library Versions:";
      continue;
    }
    if (line.empty()) break;  // the section ends at a blank line
    const size_t space = line.rfind(' ');
    if (space == std::string::npos || space == 0) continue;
    out[library_key(line.substr(0, space))] = line.substr(space + 1);
  }
  return out;
}

LibraryVersions library_versions_from_json(std::string_view json) {
  Value v;
  std::string error;
  if (!parse_json(json, v, error)) throw std::invalid_argument("library versions: invalid JSON: " + error);
  if (!v.is_object()) throw std::invalid_argument("library versions: expected an object of name: version");
  LibraryVersions out;
  for (const Member& m : v.as_object()) {
    if (!m.value.is_string()) throw std::invalid_argument("library versions: '" + std::string(key_name(m.key)) + "' is not a string");
    out[library_key(key_name(m.key))] = m.value.as_string();
  }
  return out;
}

namespace {

// "torch 2.13" or "torch 2.12 or 2.13".
std::string vetted_text(const std::string& library, const std::vector<std::string>& versions) {
  std::string out = library + " ";
  for (size_t i = 0; i < versions.size(); ++i) out += (i == 0 ? "" : i + 1 == versions.size() ? " or " : ", ") + versions[i];
  return out;
}

}  // namespace

VersionGate gate_by_version(const std::vector<Invariant>& invariants, const LibraryVersions& running) {
  VersionGate gate;
  gate.skipped.assign(invariants.size(), false);
  std::set<std::string> vetted, ran;  // the texts the note names, each once
  for (size_t i = 0; i < invariants.size(); ++i) {
    for (const auto& [library, versions] : invariants[i].vetted_on) {
      const auto it = running.find(library_key(library));
      if (it == running.end() || versions.empty()) continue;  // unknown here: checked
      const std::string series = version_series(it->second);
      if (std::find(versions.begin(), versions.end(), series) != versions.end()) continue;
      gate.skipped[i] = true;
      vetted.insert(vetted_text(library, versions));
      ran.insert(library + " " + it->second);
    }
    gate.count += gate.skipped[i];
  }
  if (gate.count == 0) return gate;
  auto join = [](const std::set<std::string>& texts) {
    std::string out;
    for (const std::string& t : texts) out += (out.empty() ? "" : ", ") + t;
    return out;
  };
  gate.note = std::to_string(gate.count) + (gate.count == 1 ? " invariant" : " invariants") + " vetted on " +
              join(vetted) + " not checked on " + join(ran);
  return gate;
}

}  // namespace traincheck
