// The relation pool: every implemented relation, by class name.
#pragma once

#include <string_view>
#include <vector>

#include "invariant/relation.h"

namespace traincheck {

// Implemented relations, in the original's pool order. The objects live for the whole process.
const std::vector<const Relation*>& implemented_relations();
// Their names, in the same order: the relation names invariant files may use (invariant/invariant.h).
const RelationNames& relation_names();
// nullptr when no relation has this name.
const Relation* find_relation(std::string_view name);

// Functions that are never candidate parents: the original's ANALYSIS_SKIP_FUNC_NAMES substrings, and
// private functions and modules (methods of private base classes such as _BatchNorm, and of the C
// extension's classes such as torch._C.TensorBase, are kept).
bool is_analysis_skipped_function(std::string_view function);

}  // namespace traincheck
