// APIContainRelation: see the header of api_contain.cpp.
#pragma once

#include "invariant/relation.h"

namespace traincheck {

class ApiContainRelation final : public Relation {
 public:
  std::string_view name() const override { return "APIContainRelation"; }
  std::vector<Hypothesis> generate(const TraceStore& trace) const override;
  void collect_examples(const TraceStore& trace, Hypothesis& hypothesis) const override;
  void merge(Hypothesis& into, Hypothesis&& other) const override;
  CheckResult check(const TraceStore& trace, const Invariant& invariant, const CheckOptions& options) const override;
  std::string display_name(const Invariant& invariant) const override;

  // Whether `call` contains an event matching `child` (an APIParam, VarTypeParam or VarNameParam).
  static bool contains(const TraceStore& trace, const CallEvent& call, const Param& child);
};

}  // namespace traincheck
