#include "relations/threshold.h"

#include <gtest/gtest.h>

#include "call_trace_text.h"
#include "infer/engine.h"
#include "trace/json_parse.h"
#include "trace/trace_reader.h"

using namespace traincheck;

namespace {

constexpr const char* kGenerate = "mylib.Model.generate";
const ThresholdRelation kRelation;

// generate(prompt, max_new_tokens=...) returning a [1, length] tensor.
struct Text : CallTraceText {
  void generate(int step, int length, const std::string& kwargs) {
    call(kGenerate, step,
         "\"return_values\":{\"torch.Tensor\":{\"_TRAINCHECK_data_ID\":" + std::to_string(7000 + id) +
             ",\"dtype\":\"torch.int64\",\"shape\":[1," + std::to_string(length) + "],\"ndim\":2,\"requires_grad\":false}},",
         "\"args\":{\"0\":{\"str\":\"hello\"}},\"kwargs\":{" + kwargs + "}");
  }
};

// Lengths 9, 10, 8, 10, ... with max_new_tokens=10 passed (or left to its default of 10, in the
// recorded signature); `bad_step` generates 12.
Text generate_run(int steps, int bad_step = -1, bool by_default = false) {
  Text t;
  for (int s = 0; s < steps; ++s) {
    const int length = s == bad_step ? 12 : 8 + (s % 3);
    t.generate(s, length, by_default ? "" : "\"max_new_tokens\":{\"int\":10}");
  }
  return t;
}

ApiSignatures generate_signature() {
  Value root;
  std::string error;
  EXPECT_TRUE(parse_json(R"({"mylib.Model.generate": {"params": [{"name": "prompt"}, {"name": "max_new_tokens", "default": 10},
                                                                 {"name": "min_length", "default": 0}]}})",
                         root, error));
  return ApiSignatures::from_value(root, "test");
}

TraceStore store(const std::string& name, const Text& t, ApiSignatures sigs = {}) {
  return TraceStore(name, read_trace_text(name, t.text), std::move(sigs));
}

const Invariant* find_max_bound(const std::vector<Invariant>& invs) {
  for (const Invariant& inv : invs) {
    const std::optional<ThresholdRelation::Bound> b = ThresholdRelation::bound_of(inv);
    if (b && b->is_max && b->argument == "max_new_tokens" && b->output.attr == "shape" && b->output.element == 1) return &inv;
  }
  return nullptr;
}

}  // namespace

TEST(Threshold, OutputLengthAtMostMaxNewTokensIsLearnedAndAnOverlongOutputFoundOfflineAndOnline) {
  const TraceStore good = store("good", generate_run(6));
  const InferResult result = infer_invariants({&good}, {&kRelation}, InferOptions{});
  const Invariant* inv = find_max_bound(result.invariants);
  ASSERT_NE(inv, nullptr) << result.invariants.size();
  // The original's layout (docs/relations.md §ThresholdRelation): [argument, API, output], the argument typed
  // as the original writes it.
  EXPECT_EQ(inv->params[0].name, "max_new_tokens");
  EXPECT_EQ(inv->params[0].io_type, "<class 'int'>");
  EXPECT_TRUE(inv->params[0].index.is_null());
  EXPECT_EQ(inv->params[2].name, "output_tensors");
  // Nothing bounds the tensor's other numbers (ndim 2 is not within 20% of 10).
  for (const Invariant& other : result.invariants) EXPECT_NE(ThresholdRelation::bound_of(other)->output.attr, "ndim");
  EXPECT_TRUE(kRelation.check(good, *inv, {}).passed());

  const TraceStore bad = store("bad", generate_run(6, 4));
  const CheckResult offline = kRelation.check(bad, *inv, {});
  EXPECT_EQ(offline_steps(bad, offline), std::vector<int64_t>{4});
  bool triggered = false;
  EXPECT_EQ(online_steps(run_call_online(kRelation, bad, *inv, &triggered)), std::vector<int64_t>{4});
  EXPECT_TRUE(triggered);
}

TEST(Threshold, DefaultsComeFromTheRecordedSignatureAndMinBoundsWork) {
  const TraceStore good = store("good", generate_run(6, -1, /*by_default=*/true), generate_signature());
  const InferResult result = infer_invariants({&good}, {&kRelation}, InferOptions{});
  ASSERT_NE(find_max_bound(result.invariants), nullptr);
  // min_length = 0: a zero bound never makes a hypothesis (its closeness is undefined).
  for (const Invariant& inv : result.invariants) EXPECT_TRUE(ThresholdRelation::bound_of(inv)->is_max);

  // A min bound from an invariant file: [output, API, argument], output >= argument.
  Invariant min_inv = *find_max_bound(result.invariants);
  std::swap(min_inv.params[0], min_inv.params[2]);
  min_inv.params[2].name = "min_length";
  const std::optional<ThresholdRelation::Bound> b = ThresholdRelation::bound_of(min_inv);
  ASSERT_TRUE(b && !b->is_max && b->argument == "min_length");
  EXPECT_TRUE(kRelation.check(good, min_inv, {}).passed());
  EXPECT_TRUE(kRelation.check(good, min_inv, {}).triggered);
  // The default applies to the check too: an overlong output is found; without the signature the
  // default is unknown and no call can be judged.
  const Invariant& max_inv = *find_max_bound(result.invariants);
  const TraceStore signed_bad = store("b", generate_run(6, 4, true), generate_signature());
  EXPECT_EQ(offline_steps(signed_bad, kRelation.check(signed_bad, max_inv, {})), std::vector<int64_t>{4});
  EXPECT_TRUE(kRelation.check(store("u", generate_run(6, 4, true)), max_inv, {}).passed());
}

TEST(Threshold, MalformedParamsAreNoBound) {
  Invariant inv;
  inv.relation = "ThresholdRelation";
  inv.params = {Param::api(kGenerate)};
  EXPECT_FALSE(ThresholdRelation::bound_of(inv));
  EXPECT_FALSE(kRelation.check(store("t", generate_run(2)), inv, {}).triggered);
  EXPECT_EQ(kRelation.display_name(inv), "");
}
