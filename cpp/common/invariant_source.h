// What an `-i` argument names: an invariant file's path, or a shipped pack by name, `pack:<name>`
// (docs/formats.md §Shipped packs). A pack is package data of the installed wheel,
// <site-packages>/traincheck/packs/<name>.json; the native commands are installed in the scripts folder
// of the same prefix, so the pack is looked up relative to the running executable, after
// $TRAINCHECK_PACK_DIR (a folder holding <name>.json) when that is set.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace traincheck {

inline constexpr const char* kPackPrefix = "pack:";
inline constexpr const char* kPackDirSetting = "TRAINCHECK_PACK_DIR";

class PackNotFound : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The folders searched for packs, in order (those that do not exist included).
std::vector<std::string> pack_search_folders();

// `argument` unchanged unless it starts with "pack:"; then the pack's file. Throws PackNotFound naming
// the pack and every folder searched.
std::string resolve_invariant_source(const std::string& argument);
std::vector<std::string> resolve_invariant_sources(const std::vector<std::string>& arguments);

}  // namespace traincheck
