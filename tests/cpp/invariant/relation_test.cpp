// invariant_label (invariant/relation.h): the one label fallback of offline and online checking.
#include "invariant/relation.h"

#include <gtest/gtest.h>

#include "invariant/invariant.h"

using namespace traincheck;

namespace {

// A relation whose label is its argument's api name when the invariant has params, else none.
class LabelledRelation final : public Relation {
 public:
  std::string_view name() const override { return "LabelledRelation"; }
  std::vector<Hypothesis> generate(const TraceStore&) const override { return {}; }
  void collect_examples(const TraceStore&, Hypothesis&) const override {}
  CheckResult check(const TraceStore&, const Invariant&, const CheckOptions&) const override { return {}; }
  std::string display_name(const Invariant& invariant) const override {
    return invariant.params.empty() ? std::string() : "label of " + invariant.text_description.str();
  }
};

}  // namespace

TEST(InvariantLabel, TheRelationsDisplayNameElseTheDescription) {
  const LabelledRelation relation;
  Invariant inv;
  inv.text_description = "described";
  EXPECT_EQ(invariant_label(&relation, inv), "described");  // the relation gives no label
  EXPECT_EQ(invariant_label(nullptr, inv), "described");    // no relation
  inv.params.emplace_back();
  EXPECT_EQ(invariant_label(&relation, inv), "label of described");
}
