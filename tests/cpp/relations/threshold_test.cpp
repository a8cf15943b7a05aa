#include "relations/threshold.h"

#include <gtest/gtest.h>

#include "case_trace.h"
#include "infer/engine.h"

using namespace traincheck;

namespace {

constexpr const char* kGenerate = "mylib.Model.generate";
const ThresholdRelation kRelation;

const Invariant* find_max_bound(const std::vector<Invariant>& invs) {
  for (const Invariant& inv : invs) {
    const std::optional<ThresholdRelation::Bound> b = ThresholdRelation::bound_of(inv);
    if (b && b->is_max && b->argument == "max_new_tokens" && b->output.attr == "shape" && b->output.element == 1) return &inv;
  }
  return nullptr;
}

}  // namespace

// Learning from a signature's defaults and checking with them: relation_cases/threshold/default_from_signature.
TEST(Threshold, MinBoundsFromAnInvariantFileWork) {
  const TraceStore good = load_case_trace("threshold/default_from_signature/infer/good.jsonl");
  ASSERT_FALSE(good.signatures().empty());
  const InferResult result = infer_invariants({&good}, {&kRelation}, InferOptions{});
  ASSERT_NE(find_max_bound(result.invariants), nullptr);
  // min_length = 0: a zero bound never makes a hypothesis (its closeness is undefined).
  for (const Invariant& inv : result.invariants) EXPECT_TRUE(ThresholdRelation::bound_of(inv)->is_max);

  // A min bound from an invariant file: [output, API, argument], output >= argument.
  Invariant min_inv = *find_max_bound(result.invariants);
  std::swap(min_inv.params[0], min_inv.params[2]);
  min_inv.params[2].name = Name("min_length");
  const std::optional<ThresholdRelation::Bound> b = ThresholdRelation::bound_of(min_inv);
  ASSERT_TRUE(b && !b->is_max && b->argument == "min_length");
  EXPECT_TRUE(kRelation.check(good, min_inv, {}).passed());
  EXPECT_TRUE(kRelation.check(good, min_inv, {}).triggered);
}

TEST(Threshold, MalformedParamsAreNoBound) {
  Invariant inv;
  inv.relation = "ThresholdRelation";
  inv.params = {Param::api(kGenerate)};
  EXPECT_FALSE(ThresholdRelation::bound_of(inv));
  EXPECT_FALSE(kRelation.check(load_case_trace("threshold/max_new_tokens/infer/good.jsonl"), inv, {}).triggered);
  EXPECT_EQ(kRelation.display_name(inv), "");
}
