#include "relations/consistent_input_output.h"

#include <gtest/gtest.h>

#include "call_trace_text.h"
#include "infer/engine.h"
#include "relations/call_checks.h"
#include "relations/registry.h"
#include "trace/trace_reader.h"

using namespace traincheck;

namespace {

constexpr const char* kNormal = "torch.Tensor.normal_";

std::string tensor(int rows, const std::string& dtype = "torch.float32") {
  return "{\"torch.Tensor\":{\"_TRAINCHECK_data_ID\":77,\"dtype\":\"" + dtype + "\",\"shape\":[" + std::to_string(rows) +
         ",3],\"requires_grad\":false}}";
}

// normal_(x) returns a tensor of x's shape; rows vary per call (so only the real relation holds); at
// `bad_step` the output has one row more.
CallTraceText normal_run(int steps, int bad_step = -1) {
  CallTraceText t;
  for (int s = 0; s < steps; ++s) {
    const int rows = 2 + (s * 5) % 7;
    t.call(kNormal, s, "\"return_values\":" + tensor(rows + (s == bad_step ? 1 : 0)) + ",",
           "\"args\":{\"0\":" + tensor(rows) + "},\"kwargs\":{\"mean\":{\"float\":0.0}}");
  }
  return t;
}

TraceStore store(const std::string& name, const CallTraceText& t) { return TraceStore(name, read_trace_text(name, t.text)); }

// The original's example (header of cpp/relations/consistent_input_output.cpp): normal_'s output shape[0]
// equals its input's, Unconditional.
const char* kRealExample =
    R"({"text_description": "real", "relation": "ConsistentInputOutputRelation", "params": [)"
    R"({"param_type": "InputOutputParam", "name": "input_tensors", "index": 0, "type": "torch.Tensor", "additional_path": ["shape", 0], "api_name": "torch.Tensor.normal_", "is_input": true},)"
    R"({"param_type": "APIParam", "api_full_name": "torch.Tensor.normal_"},)"
    R"({"param_type": "InputOutputParam", "name": "output_tensors", "index": 0, "type": "torch.Tensor", "additional_path": ["shape", 0], "api_name": "torch.Tensor.normal_", "is_input": false}],)"
    R"("precondition": {"pre_event": {"inverted": false, "preconditions": [{"clauses": "Unconditional"}]}},)"
    R"("num_positive_examples": 20, "num_negative_examples": 0})";

std::vector<int64_t> online_violation_steps(const TraceStore& t, const Invariant& inv, bool* triggered = nullptr) {
  return online_steps(run_call_online(ConsistentInputOutputRelation(), t, inv, triggered));
}

}  // namespace

TEST(ConsistentInputOutput, IsRegistered) {
  ASSERT_NE(find_relation("ConsistentInputOutputRelation"), nullptr);
}

TEST(ConsistentInputOutput, InputTensorsArePositionalThenKeyword) {
  CallTraceText t;
  t.call("f", 0, "", "\"args\":{\"1\":" + tensor(5) + ",\"0\":" + tensor(4) + ",\"2\":{\"int\":3}},\"kwargs\":{\"out\":" + tensor(6) + "}");
  const TraceStore s = store("in", t);
  const auto ins = ConsistentInputOutputRelation::input_tensors(s.record(s.calls()[0].pre));
  ASSERT_EQ(ins.size(), 3u);
  EXPECT_EQ(to_json(*ConsistentInputOutputRelation::value_at(ins, IoPath{0, "shape", 0})), "4");
  EXPECT_EQ(to_json(*ConsistentInputOutputRelation::value_at(ins, IoPath{2, "shape", 0})), "6");
  EXPECT_EQ(ConsistentInputOutputRelation::value_at(ins, IoPath{0, "shape", 2}), nullptr);
  EXPECT_EQ(ConsistentInputOutputRelation::value_at(ins, IoPath{3, "shape", 0}), nullptr);
}

TEST(ConsistentInputOutput, InferLearnsShapeEqualityAndTheBadCallIsFoundOfflineAndOnline) {
  const TraceStore good = store("good", normal_run(10));
  const InferResult result = infer_invariants({&good}, {find_relation("ConsistentInputOutputRelation")}, InferOptions{});
  const Invariant real = invariant_from_json(kRealExample);
  const Invariant* learned = nullptr;
  for (const Invariant& inv : result.invariants)
    if (inv.identity() == real.identity()) learned = &inv;
  ASSERT_NE(learned, nullptr);
  EXPECT_EQ(learned->num_positive_examples, 10);
  // Coincidences a constant dtype and shape[1] give are there too (as in the original); no id pairs.
  for (const Invariant& inv : result.invariants)
    EXPECT_EQ(to_json(inv.params[0].additional_path).find("_TRAINCHECK_"), std::string::npos);

  const ConsistentInputOutputRelation rel;
  const CheckResult ok = rel.check(good, *learned, {});
  EXPECT_TRUE(ok.passed());
  EXPECT_TRUE(ok.triggered);
  const TraceStore bad = store("bad", normal_run(10, 6));
  const CheckResult r = rel.check(bad, *learned, {});
  EXPECT_EQ(offline_steps(bad, r), std::vector<int64_t>{6});
  EXPECT_EQ(online_violation_steps(bad, *learned), std::vector<int64_t>{6});
  EXPECT_TRUE(online_violation_steps(good, *learned).empty());
}

TEST(ConsistentInputOutput, RealExampleParsesAndIsChecked) {
  const Invariant inv = invariant_from_json(kRealExample);
  const Relation* rel = find_relation(inv.relation);
  ASSERT_NE(rel, nullptr);
  EXPECT_EQ(rel->display_name(inv), "Tensor.normal_(): input 0.shape[0] == output 0.shape[0]");
  const TraceStore bad = store("real_bad", normal_run(5, 2));
  const CheckResult r = rel->check(bad, inv, {});
  EXPECT_TRUE(r.triggered);
  EXPECT_EQ(offline_steps(bad, r), std::vector<int64_t>{2});
}

TEST(ConsistentInputOutput, CallsWithoutReturnValuesAreSkipped) {
  CallTraceText t = normal_run(4, 1);
  t.call(kNormal, 4, "", "\"args\":{\"0\":" + tensor(3) + "},\"kwargs\":{}");  // no return_values recorded
  const TraceStore s = store("noret", t);
  const Invariant inv = invariant_from_json(kRealExample);
  EXPECT_EQ(offline_steps(s, ConsistentInputOutputRelation().check(s, inv, {})), std::vector<int64_t>{1});
  EXPECT_EQ(online_violation_steps(s, inv), std::vector<int64_t>{1});
  Hypothesis h;
  h.invariant = inv;
  ConsistentInputOutputRelation().collect_examples(s, h);
  EXPECT_EQ(h.positives.size(), 3u);
  EXPECT_EQ(h.negatives.size(), 1u);
}

TEST(ConsistentInputOutput, BoolsMatchOnlyTheSameAttribute) {
  CallTraceText t;
  for (int s = 0; s < 3; ++s)
    t.call("f", s, "\"return_values\":{\"torch.Tensor\":{\"is_leaf\":true,\"requires_grad\":false}},",
           "\"args\":{\"0\":{\"torch.Tensor\":{\"is_leaf\":false,\"requires_grad\":true}}},\"kwargs\":{}");
  const std::vector<Hypothesis> hs = ConsistentInputOutputRelation().generate(store("bools", t));
  EXPECT_TRUE(hs.empty());
}
