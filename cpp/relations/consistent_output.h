// ConsistentOutputRelation: see the header of consistent_output.cpp (offline) and
// call_checks.cpp (online).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "invariant/relation.h"

namespace traincheck {

class ConsistentOutputRelation final : public Relation {
 public:
  std::string_view name() const override { return "ConsistentOutputRelation"; }
  RecordNeeds record_needs(const Invariant&) const override { return {.return_values = true, .var_types_in_first_api = {}, .var_types_in_apis = {}}; }
  std::vector<Hypothesis> generate(const TraceStore& trace) const override;
  void collect_examples(const TraceStore& trace, Hypothesis& hypothesis) const override;
  CheckResult check(const TraceStore& trace, const Invariant& invariant, const CheckOptions& options) const override;
  std::unique_ptr<OnlineCheck> make_online_check(const Invariant& invariant,
                                                 const ApiSignatures* signatures = nullptr) const override;
  std::string display_name(const Invariant& invariant) const override;

  // The tensor payloads ({attr: value}) of a post-record's return_values: the single value or the
  // elements of a tuple whose type names a tensor (torch.*Tensor*) or a Parameter. Empty when the
  // record has no return_values (selective collection may leave them out).
  static std::vector<const Object*> returned_tensors(const Record& post);
  // The verdict shared by inference, the offline and the online check: the call returned at least one
  // tensor and every returned tensor has `attr` equal to `expected`.
  static bool outputs_match(const Record& post, std::string_view attr, const Value& expected);
  // The payload of a recorded value {type: payload} whose type names a tensor (torch.*Tensor*) or a
  // Parameter; null otherwise.
  static const Object* tensor_payload(const Value& recorded);
};

// The calls of `function` that returned (neither raised nor left open): the only ones judged by the
// relations about a call's outputs.
std::vector<uint32_t> complete_calls(const TraceStore& trace, std::string_view function);

}  // namespace traincheck
