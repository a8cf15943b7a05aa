// Invariants and their JSON Lines files (docs/formats.md §Invariant files).
//
// Identity is (relation, params) only (docs/formats.md §Invariant identity): two invariants with different
// preconditions or descriptions are the same invariant. Files are written sorted by text_description, one
// invariant per line, in Python json.dumps' default style so either tool reads the other's files.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "invariant/param.h"
#include "invariant/precondition.h"
#include "invariant/shared_text.h"

namespace traincheck {

struct Invariant {
  SharedText text_description;  // quotes its params' names by reference (shared_text.h)
  std::string relation;
  std::vector<Param> params;
  std::optional<GroupedPreconditions> precondition;  // nullopt: "Failed" / not inferred
  std::optional<int64_t> num_positive_examples;      // nullopt: null
  std::optional<int64_t> num_negative_examples;
  // Ours, in a vetted pack (pack/vetting.h): the corpus programs it held on, the reason to trust a violation
  // of it (docs/formats.md §Invariant files). Written only when set, so other files stay the original's.
  std::optional<int64_t> held_on_programs;
  // Ours, in a vetted pack: for an invariant about how a library is implemented (Relation::version_bound),
  // the library versions ("major.minor") the corpus ran on, by library: {"torch": ["2.13"]}. A run on
  // another version does not check it (invariant/version_gate.h). Empty: holds on every version.
  std::map<std::string, std::vector<std::string>> vetted_on;

  std::string identity() const;  // relation + canonical params
  // Equal iff identity() is, within this process; names by their interned ids (Param::compact_key), so
  // its length does not grow with theirs.
  std::string compact_identity() const;
  // The precondition's group of that name; nullptr when there is none (or no precondition).
  const PreconditionGroup* precondition_group(std::string_view name) const {
    return precondition ? precondition->find(name) : nullptr;
  }
  Value to_value() const;
  std::string to_json_line() const;  // Python json.dumps style, no newline
};

class InvariantFormatError : public std::runtime_error {
 public:
  InvariantFormatError(const std::string& file, size_t line, const std::string& field, const std::string& what);
  std::string file, field;
  size_t line = 0;
};

// The relation names an invariant may use. The codec does not know the relations (they live above it,
// in relations/): who reads a file passes the registry's names (relations/registry.h relation_names()).
using RelationNames = std::vector<std::string>;

// Parses one invariant object; `file`/`line` only label errors. Throws InvariantFormatError. The
// relation must be one of `relations` when given (nullptr: any name).
Invariant invariant_from_value(const Value& v, const std::string& file = "<memory>", size_t line = 0,
                               const RelationNames* relations = nullptr);
Invariant invariant_from_json(std::string_view text, const std::string& file = "<memory>", size_t line = 0,
                              const RelationNames* relations = nullptr);

// Reads a JSONL invariant file (blank lines ignored) whose relations are all among `relations`.
// Throws InvariantFormatError. The visitor form also gives each invariant's line number.
std::vector<Invariant> read_invariant_file(const std::string& path, const RelationNames& relations);
// Every file's invariants, in file order; an invariant met again by identity (another -i file, or the same
// file twice) is kept once, the first (docs/formats.md §Invariant identity). How traincheck-check and the
// online checkers merge their -i files.
std::vector<Invariant> read_invariant_files(const std::vector<std::string>& paths, const RelationNames& relations);
void for_each_invariant_in_file(const std::string& path, const RelationNames& relations,
                                const std::function<void(Invariant&&, size_t line)>& visit);

// The APIs an invariant is about, in param order: each APIParam's api_full_name and each
// InputOutputParam's api_name.
std::vector<std::string> named_apis(const Invariant& invariant);
// The context managers its precondition's clauses name ("meta_vars.context_managers.<X>" -> X).
std::set<std::string> context_managers_named(const Invariant& invariant);

// Writes invariants sorted by text_description (stable), one per line.
void write_invariant_file(const std::string& path, std::vector<Invariant> invariants);

struct FailedHypothesis {
  Invariant invariant;  // precondition written as "Failed"
  std::string reason;   // "only one positive example" | "Precondition not found"
  int64_t num_positive_examples = 0;
  int64_t num_negative_examples = 0;
};
void write_failed_file(const std::string& path, const std::vector<FailedHypothesis>& failed);

}  // namespace traincheck
