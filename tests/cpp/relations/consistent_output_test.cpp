#include "relations/consistent_output.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <unistd.h>

#include "call_trace_text.h"
#include "case_trace.h"
#include "check/online/online_checker.h"
#include "infer/engine.h"
#include "relations/call_checks.h"
#include "relations/registry.h"
#include "trace/trace_reader.h"

using namespace traincheck;

namespace {

constexpr const char* kRelu = "torch.nn.functional.relu";

TraceStore store(const std::string& name, const CallTraceText& t) { return TraceStore(name, read_trace_text(name, t.text)); }

// The original's autocast invariant (header of cpp/relations/consistent_output.cpp), with its clauses.
const char* kRealExample =
    R"({"text_description": "real", "relation": "ConsistentOutputRelation", "params": [)"
    R"({"param_type": "APIParam", "api_full_name": "torch.nn.functional.relu"},)"
    R"({"param_type": "VarTypeParam", "var_type": "torch.Tensor", "attr_name": "dtype", "const_value": "torch.float16"}],)"
    R"("precondition": {"pre_event": {"inverted": false, "preconditions": [{"clauses": [)"
    R"({"type": "constant", "prop_name": "meta_vars.stage", "additional_path": "None", "prop_dtype": "str", "values": ["training"]},)"
    R"({"type": "constant", "prop_name": "meta_vars.context_managers.torch.amp.autocast_mode.autocast", "additional_path": ["dtype"], "prop_dtype": "str", "values": ["torch.float16"]},)"
    R"({"type": "exist", "prop_name": "meta_vars.context_managers.torch.amp.autocast_mode.autocast", "additional_path": "None", "prop_dtype": "None"}]}]}},)"
    R"("num_positive_examples": 503, "num_negative_examples": 497})";

}  // namespace

TEST(ConsistentOutput, IsRegistered) {
  ASSERT_NE(find_relation("ConsistentOutputRelation"), nullptr);
  EXPECT_EQ(find_relation("ConsistentOutputRelation")->name(), "ConsistentOutputRelation");
}

TEST(ConsistentOutput, ReturnedTensorsOfSingleAndTupleResults) {
  CallTraceText t;
  t.call("f", 0, "\"return_values\":[{\"torch.cuda.HalfTensor\":{\"dtype\":\"torch.float16\"}},{\"int\":3},"
                 "{\"torch.nn.parameter.Parameter\":{\"dtype\":\"torch.float16\"}}],");
  t.call("g", 0, "\"return_values\":{\"torch.Size\":[2,3]},");
  t.call("h", 0, "");  // selective collection: no return_values
  const TraceStore s = store("rt", t);
  EXPECT_EQ(ConsistentOutputRelation::returned_tensors(s.record(s.calls()[s.calls_of("f")[0]].post)).size(), 2u);
  EXPECT_TRUE(ConsistentOutputRelation::returned_tensors(s.record(s.calls()[s.calls_of("g")[0]].post)).empty());
  EXPECT_TRUE(ConsistentOutputRelation::returned_tensors(s.record(s.calls()[s.calls_of("h")[0]].post)).empty());
  EXPECT_TRUE(ConsistentOutputRelation::outputs_match(s.record(s.calls()[s.calls_of("f")[0]].post), "dtype",
                                                      Value::string("torch.float16")));
  EXPECT_FALSE(ConsistentOutputRelation::outputs_match(s.record(s.calls()[s.calls_of("h")[0]].post), "dtype",
                                                       Value::string("torch.float16")));
}

// What inference learns from both traces: relation_cases/consistent_output/mixed_dtypes_learned. There
// the hypothesis comes from both and is merged; here one trace's is completed from the other.
TEST(ConsistentOutput, MixedDtypesGiveExamplesOfBothSignsAndCollectFromAnotherTrace) {
  const TraceStore mixed = load_case_trace("consistent_output/mixed_dtypes_learned/infer/mixed.jsonl");
  const std::vector<Hypothesis> hs = ConsistentOutputRelation().generate(mixed);
  const Hypothesis* f32 = nullptr;
  for (const Hypothesis& h : hs)
    if (h.invariant.params[1].attr_name == "dtype" && to_json(*h.invariant.params[1].const_value) == "\"torch.float32\"") f32 = &h;
  ASSERT_NE(f32, nullptr);
  EXPECT_EQ(f32->positives.size(), 7u);
  EXPECT_EQ(f32->negatives.size(), 1u);

  Hypothesis copy = *f32;
  ConsistentOutputRelation().collect_examples(load_case_trace("consistent_output/mixed_dtypes_learned/infer/other.jsonl"), copy);
  EXPECT_EQ(copy.positives.size(), 11u);
  EXPECT_EQ(copy.negatives.size(), 1u);
}

// The offline and online checks of this trace: relation_cases/consistent_output/post_without_return_values.
TEST(ConsistentOutput, PostWithoutReturnValuesIsANegative) {
  const TraceStore s = load_case_trace("consistent_output/post_without_return_values/check/noret.jsonl");
  const std::vector<Hypothesis> hs = ConsistentOutputRelation().generate(s);
  size_t negatives = 0;
  for (const Hypothesis& h : hs)
    if (h.invariant.params[1].attr_name == "dtype") negatives = h.negatives.size();
  EXPECT_EQ(negatives, 1u);
}

// The real example checked offline and by a bare online check: relation_cases/consistent_output/autocast_real_example.
TEST(ConsistentOutput, TheOnlineCheckerTracksAutocastAsOffline) {
  const Invariant inv = invariant_from_json(kRealExample);
  const TraceStore good = load_case_trace("consistent_output/autocast_real_example/check/ac_good.jsonl");
  const TraceStore bad = load_case_trace("consistent_output/autocast_real_example/check/ac_bad.jsonl");

  // The online checker tracks the managers the invariants name and offers records enriched with them:
  // the same verdict as offline.
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("tc_co_cm_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  {
    OnlineChecker checker({inv}, {}, OnlineCheckerOptions{dir.string()});
    for (const Record& rec : bad.records()) checker.check_record(rec);
    const OnlineCounts c = checker.counts();
    EXPECT_EQ(c.triggered, 1u);
    EXPECT_EQ(c.violations, 1u);
    EXPECT_EQ(checker.states()[0].first_step, std::optional<int64_t>(3));
  }
  {
    OnlineChecker checker({inv}, {}, OnlineCheckerOptions{(dir / "good").string()});
    for (const Record& rec : good.records()) checker.check_record(rec);
    EXPECT_EQ(checker.counts().triggered, 1u);
    EXPECT_EQ(checker.counts().violations, 0u);
  }
  std::filesystem::remove_all(dir);
}

TEST(ConsistentOutput, OnlineInterestIsTheApi) {
  const std::unique_ptr<OnlineCheck> check = ConsistentOutputRelation().make_online_check(invariant_from_json(kRealExample));
  const OnlineInterest i = check->interest();
  EXPECT_FALSE(i.all_records);
  EXPECT_EQ(i.functions, std::vector<std::string>{kRelu});
  EXPECT_TRUE(i.var_types.empty());
}

TEST(ConsistentOutput, DisplayName) {
  EXPECT_EQ(ConsistentOutputRelation().display_name(invariant_from_json(kRealExample)),
            "relu() returns tensors with dtype = torch.float16");
}
