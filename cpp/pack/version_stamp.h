// Which library versions a pack's invariants hold on (docs/relations.md §The shipped pack).
//
// A corpus runs on one set of library versions. An invariant about a library's implementation
// (Relation::version_bound: which functions Adam.step calls) is known to hold only there; the pack says so
// in the invariant (Invariant::vetted_on), and a run on another version does not check it
// (invariant/version_gate.h). Invariants over training semantics (the step claims, ModuleMode,
// Consistency across ranks) get no stamp: they are checked on every version.
#pragma once

#include <vector>

#include "invariant/invariant.h"
#include "invariant/version_gate.h"

namespace traincheck {

// Sets vetted_on of each version-bound invariant to the series ("2.13") of the `corpus` version of each
// library its functions belong to (the first component of each named API: "torch" of
// "torch.optim.adam.Adam.step"); a library `corpus` lacks gets no entry. Other invariants are left as
// they are. Returns how many invariants were stamped.
size_t stamp_vetted_versions(std::vector<Invariant>& invariants, const LibraryVersions& corpus);

// "torch=2.13.0,transformers=5.25.0" as LibraryVersions. Throws std::invalid_argument naming the
// malformed entry.
LibraryVersions parse_library_versions_flag(const std::string& text);

}  // namespace traincheck
