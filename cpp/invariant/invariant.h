// Invariants and their JSON Lines files (docs/formats.md §Invariant files).
//
// Identity is (relation, params) only (docs/formats.md §Invariant identity): two invariants with different
// preconditions or descriptions are the same invariant. Files are written sorted by text_description, one
// invariant per line, in Python json.dumps' default style so either tool reads the other's files.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "invariant/param.h"
#include "invariant/precondition.h"

namespace traincheck {

// The relation class names the original registers (docs/relations.md); invariant files may name any of them.
const std::vector<std::string>& known_relation_names();
bool is_known_relation(std::string_view name);

struct Invariant {
  std::string text_description;
  std::string relation;
  std::vector<Param> params;
  std::optional<GroupedPreconditions> precondition;  // nullopt: "Failed" / not inferred
  std::optional<int64_t> num_positive_examples;      // nullopt: null
  std::optional<int64_t> num_negative_examples;

  std::string identity() const;  // relation + canonical params
  Value to_value() const;
  std::string to_json_line() const;  // Python json.dumps style, no newline
};

class InvariantFormatError : public std::runtime_error {
 public:
  InvariantFormatError(const std::string& file, size_t line, const std::string& field, const std::string& what);
  std::string file, field;
  size_t line = 0;
};

// Parses one invariant object; `file`/`line` only label errors. Throws InvariantFormatError.
Invariant invariant_from_value(const Value& v, const std::string& file = "<memory>", size_t line = 0);
Invariant invariant_from_json(std::string_view text, const std::string& file = "<memory>", size_t line = 0);

// Reads a JSONL invariant file (blank lines ignored). Throws InvariantFormatError.
std::vector<Invariant> read_invariant_file(const std::string& path);

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
