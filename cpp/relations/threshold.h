// ThresholdRelation: see the header of threshold.cpp (offline; online: CallOnlineCheck).
#pragma once

#include <optional>
#include <string>

#include "invariant/relation.h"
#include "relations/tensor_paths.h"

namespace traincheck {

class ThresholdRelation final : public Relation {
 public:
  std::string_view name() const override { return "ThresholdRelation"; }
  RecordNeeds record_needs(const Invariant&) const override { return {.arguments = true, .return_values = true, .var_types_in_first_api = {}, .var_types_in_apis = {}}; }
  std::vector<Hypothesis> generate(const TraceStore& trace) const override;
  void collect_examples(const TraceStore& trace, Hypothesis& hypothesis) const override;
  CheckResult check(const TraceStore& trace, const Invariant& invariant, const CheckOptions& options) const override;
  std::unique_ptr<OnlineCheck> make_online_check(const Invariant& invariant,
                                                 const ApiSignatures* signatures = nullptr) const override;
  std::string display_name(const Invariant& invariant) const override;

  // A hypothesis needs an output within this fraction of the threshold, on the bounded side.
  static constexpr double kCloseness = 0.2;

  // What an invariant bounds: the output at `output` against the argument `argument` (bound by name,
  // signature defaults included), from above (`is_max`: output <= argument) or below.
  struct Bound {
    std::string argument;
    IoPath output;
    bool is_max = true;
  };
  static std::optional<Bound> bound_of(const Invariant& invariant);
  // The verdict shared by inference and both checks: nullopt when the argument or the output value is
  // missing or not a number (the call is skipped), else whether the bound holds.
  static std::optional<bool> call_within(const Record& pre, const Record& post, const Bound& bound,
                                         const ApiSignatures& signatures);
};

}  // namespace traincheck
