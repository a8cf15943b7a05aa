#include "relations/consistent_input_output.h"

#include <gtest/gtest.h>

#include "call_trace_text.h"
#include "case_trace.h"
#include "infer/engine.h"
#include "relations/call_checks.h"
#include "relations/registry.h"
#include "trace/trace_reader.h"

using namespace traincheck;

namespace {

std::string tensor(int rows, const std::string& dtype = "torch.float32") {
  return "{\"torch.Tensor\":{\"_TRAINCHECK_data_ID\":77,\"dtype\":\"" + dtype + "\",\"shape\":[" + std::to_string(rows) +
         ",3],\"requires_grad\":false}}";
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

// The offline and online checks of this trace: relation_cases/consistent_input_output/calls_without_return_values.
TEST(ConsistentInputOutput, CallsWithoutReturnValuesAreNoExamples) {
  const TraceStore s = load_case_trace("consistent_input_output/calls_without_return_values/check/noret.jsonl");
  Hypothesis h;
  h.invariant = invariant_from_json(kRealExample);
  ConsistentInputOutputRelation().collect_examples(s, h);
  EXPECT_EQ(h.positives.size(), 3u);
  EXPECT_EQ(h.negatives.size(), 1u);
}

