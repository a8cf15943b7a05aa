// ModuleModeRelation: see the header of module_mode_relation.cpp.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "invariant/relation.h"

namespace traincheck {

class ModuleModeRelation final : public Relation {
 public:
  std::string_view name() const override { return "ModuleModeRelation"; }
  std::vector<Hypothesis> generate(const TraceStore& trace) const override;
  void collect_examples(const TraceStore& trace, Hypothesis& hypothesis) const override;
  CheckResult check(const TraceStore& trace, const Invariant& invariant, const CheckOptions& options) const override;
  std::unique_ptr<OnlineCheck> make_online_check(const Invariant& invariant,
                                                 const ApiSignatures* signatures = nullptr) const override;
  std::string display_name(const Invariant& invariant) const override;
  // A module's mode during its forward is what training means, on every version.
  bool version_bound(const Invariant&) const override { return false; }
};

}  // namespace traincheck
