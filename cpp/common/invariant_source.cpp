#include "common/invariant_source.h"

#include <cstdlib>
#include <filesystem>

namespace traincheck {

namespace fs = std::filesystem;

std::vector<std::string> pack_search_folders() {
  std::vector<std::string> out;
  if (const char* dir = std::getenv(kPackDirSetting); dir != nullptr && *dir != '\0') out.emplace_back(dir);
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return out;
  // <prefix>/bin/traincheck-check -> <prefix>/lib*/python3.*/{site,dist}-packages/traincheck/packs
  const fs::path prefix = exe.parent_path().parent_path();
  for (const char* lib : {"lib", "lib64", "local/lib"}) {
    const fs::path libdir = prefix / lib;
    if (!fs::is_directory(libdir, ec)) continue;
    for (const auto& entry : fs::directory_iterator(libdir, ec)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("python", 0) != 0) continue;
      for (const char* site : {"site-packages", "dist-packages"}) out.push_back((entry.path() / site / "traincheck" / "packs").string());
    }
  }
  return out;
}

std::string resolve_invariant_source(const std::string& argument) {
  const std::string prefix = kPackPrefix;
  if (argument.rfind(prefix, 0) != 0) return argument;
  const std::string name = argument.substr(prefix.size());
  if (name.empty() || name.find('/') != std::string::npos)
    throw PackNotFound("-i " + argument + ": a pack name is a plain name, e.g. pack:default");
  const std::vector<std::string> folders = pack_search_folders();
  std::error_code ec;
  for (const std::string& folder : folders) {
    const fs::path file = fs::path(folder) / (name + ".json");
    if (fs::is_regular_file(file, ec)) return file.string();
  }
  std::string searched;
  for (const std::string& folder : folders) searched += "\n  " + folder;
  throw PackNotFound("-i " + argument + ": no pack '" + name + ".json' in (set " + kPackDirSetting +
                     " to a folder holding it):" + (searched.empty() ? std::string(" nothing to search") : searched));
}

std::vector<std::string> resolve_invariant_sources(const std::vector<std::string>& arguments) {
  std::vector<std::string> out;
  out.reserve(arguments.size());
  for (const std::string& a : arguments) out.push_back(resolve_invariant_source(a));
  return out;
}

}  // namespace traincheck
