#include "pack/version_stamp.h"

#include <set>
#include <stdexcept>

#include "relations/registry.h"

namespace traincheck {

size_t stamp_vetted_versions(std::vector<Invariant>& invariants, const LibraryVersions& corpus) {
  size_t stamped = 0;
  for (Invariant& inv : invariants) {
    const Relation* relation = find_relation(inv.relation);
    if (relation == nullptr || !relation->version_bound(inv)) continue;
    std::set<std::string> libraries;
    for (const std::string& api : named_apis(inv)) libraries.insert(library_key(api.substr(0, api.find('.'))));
    bool any = false;
    for (const std::string& library : libraries) {
      const auto it = corpus.find(library);
      if (it == corpus.end()) continue;
      inv.vetted_on[library] = {version_series(it->second)};
      any = true;
    }
    stamped += any;
  }
  return stamped;
}

LibraryVersions parse_library_versions_flag(const std::string& text) {
  LibraryVersions out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(',', start), text.size());
    const std::string entry = text.substr(start, end - start);
    const size_t eq = entry.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == entry.size())
      throw std::invalid_argument("'" + entry + "' is not LIBRARY=VERSION");
    out[library_key(entry.substr(0, eq))] = entry.substr(eq + 1);
    start = end + 1;
  }
  return out;
}

}  // namespace traincheck
