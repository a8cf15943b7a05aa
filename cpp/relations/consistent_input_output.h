// ConsistentInputOutputRelation: see the header of consistent_input_output.cpp (offline) and
// call_checks.cpp (online).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "invariant/relation.h"
#include "relations/tensor_paths.h"

namespace traincheck {

class ConsistentInputOutputRelation final : public Relation {
 public:
  // The tensor payloads among a pre-record's arguments: positional ones in order, then keyword ones.
  static std::vector<const Object*> input_tensors(const Record& pre);
  // The value at `path`, or null when the tensor, attribute or element is missing.
  static const Value* value_at(const std::vector<const Object*>& tensors, const IoPath& path);
  // The verdict shared by inference and both checks: nullopt when either value is missing (the
  // original skips such calls), else whether they are equal.
  static std::optional<bool> call_agrees(const Record& pre, const Record& post, const IoPath& in, const IoPath& out);
  // The (input, output) paths of an invariant's params; nullopt when they are not this relation's.
  static std::optional<std::pair<IoPath, IoPath>> paths_of(const Invariant& invariant);

  std::string_view name() const override { return "ConsistentInputOutputRelation"; }
  RecordNeeds record_needs(const Invariant&) const override { return {.arguments = true, .return_values = true, .var_types_in_first_api = {}, .var_types_in_apis = {}}; }
  std::vector<Hypothesis> generate(const TraceStore& trace) const override;
  void collect_examples(const TraceStore& trace, Hypothesis& hypothesis) const override;
  CheckResult check(const TraceStore& trace, const Invariant& invariant, const CheckOptions& options) const override;
  std::unique_ptr<OnlineCheck> make_online_check(const Invariant& invariant,
                                                 const ApiSignatures* signatures = nullptr) const override;
  std::string display_name(const Invariant& invariant) const override;
};

}  // namespace traincheck
