#include "relations/distinct_argument.h"

#include <gtest/gtest.h>

#include "call_trace_text.h"
#include "infer/engine.h"
#include "trace/json_parse.h"
#include "trace/trace_reader.h"

using namespace traincheck;

namespace {

constexpr const char* kInit = "torch.nn.init.normal_";
const DistinctArgumentRelation kRelation;

Value args(const std::string& json) {
  Value v;
  std::string error;
  EXPECT_TRUE(parse_json(json, v, error)) << error;
  return v;
}

TraceStore store(const std::string& name, const CallTraceText& t) { return TraceStore(name, read_trace_text(name, t.text)); }

// Per step, two normal_ calls with seeds 2s and 2s+1 (at `bad_step` both get the same seed), then an
// optimizer step (without it normal_ would have more than 6 records in a row: a hot API, no candidate).
CallTraceText seeded_run(int steps, int bad_step = -1) {
  CallTraceText t;
  for (int s = 0; s < steps; ++s) {
    for (int k = 0; k < 2; ++k) {
      const int seed = s == bad_step ? 2 * s : 2 * s + k;
      t.call(kInit, s, "\"return_values\":{\"NoneType\":null},",
             "\"args\":{\"0\":{\"int\":" + std::to_string(seed) + "},\"1\":{\"float\":0.5}},\"kwargs\":{}");
    }
    t.call("torch.optim.sgd.SGD.step", s, "\"return_values\":{\"NoneType\":null},");
  }
  return t;
}

}  // namespace

TEST(DistinctArgument, SameArgumentsFollowTheOriginalsComparison) {
  EXPECT_TRUE(DistinctArgumentRelation::same_arguments(args(R"({"0":{"int":1},"1":{"float":0.5}})"),
                                                       args(R"({"1":{"float":0.500000000001},"0":{"int":1}})")));
  EXPECT_FALSE(DistinctArgumentRelation::same_arguments(args(R"({"0":{"int":1}})"), args(R"({"0":{"int":2}})")));
  // Types must match: 1 and 1.0 differ, as do a list and a number.
  EXPECT_FALSE(DistinctArgumentRelation::same_arguments(args(R"({"0":1})"), args(R"({"0":1.0})")));
  EXPECT_FALSE(DistinctArgumentRelation::same_arguments(args(R"({"0":[1]})"), args(R"({"0":1})")));
  // Lists of integers are the same when their sets overlap by at least 10% (intersection over union).
  EXPECT_TRUE(DistinctArgumentRelation::same_arguments(args(R"({"0":{"tuple":[8,2,1,8]}})"), args(R"({"0":{"tuple":[8,4]}})")));
  EXPECT_FALSE(DistinctArgumentRelation::same_arguments(args(R"({"0":{"tuple":[8,2]}})"), args(R"({"0":{"tuple":[3,4]}})")));
  // Other lists element by element.
  EXPECT_FALSE(DistinctArgumentRelation::same_arguments(args(R"({"0":["a","b"]})"), args(R"({"0":["a","c"]})")));
  // Different positions, or a missing argument list, are never the same.
  EXPECT_FALSE(DistinctArgumentRelation::same_arguments(args(R"({"0":1})"), args(R"({"1":1})")));
  EXPECT_FALSE(DistinctArgumentRelation::same_arguments(args(R"({"0":1})"), args(R"({"0":1,"1":2})")));
  EXPECT_FALSE(DistinctArgumentRelation::same_arguments(Value(), Value()));
}

TEST(DistinctArgument, TensorArgumentsAreTheSameOnlyWhenTheyHoldTheSameData) {
  // _TRAINCHECK_data_ID is the address of a tensor's data (record/python/value_capture.cpp): two tensors
  // of one shape are the same argument only when they hold the same data. Before, the ids took no part
  // and every two tensors of one shape were the same: `p.data.normal_()` over equally shaped parameters,
  // a correct initialisation, violated "normal_ receives different arguments".
  auto tensor = [](int id, int rows) {
    return args(R"({"0":{"torch.FloatTensor":{"_TRAINCHECK_data_ID":)" + std::to_string(id) + R"(,"shape":[)" +
                std::to_string(rows) + "," + std::to_string(2 * rows) + R"(],"dtype":"torch.float32"}}})");
  };
  EXPECT_FALSE(DistinctArgumentRelation::same_arguments(tensor(1001, 4), tensor(2002, 4)));
  EXPECT_TRUE(DistinctArgumentRelation::same_arguments(tensor(1001, 4), tensor(1001, 4)));  // initialised twice
  EXPECT_FALSE(DistinctArgumentRelation::same_arguments(tensor(1001, 4), tensor(1001, 16)));
  // An address names a tensor in its own process only: forked DataLoader workers allocate alike, so two
  // workers' tensors often share one (their `warn_if_has_hooks` calls looked repeated, run to run).
  EXPECT_FALSE(DistinctArgumentRelation::same_arguments(tensor(1001, 4), tensor(1001, 4), /*same_process=*/false));
  // Arguments without a data identity compare as before across processes.
  EXPECT_TRUE(DistinctArgumentRelation::same_arguments(args(R"({"0":{"int":1}})"), args(R"({"0":{"int":1}})"), false));
  // The tool's other ids (a grad's; either spelling) take no part.
  EXPECT_TRUE(DistinctArgumentRelation::same_arguments(args(R"({"0":{"t":{"_ML_DAIKON_grad_ID":1,"n":2}}})"),
                                                       args(R"({"0":{"t":{"_ML_DAIKON_grad_ID":3,"n":2}}})")));
  EXPECT_TRUE(DistinctArgumentRelation::same_arguments(args(R"({"0":{"t":{"_TRAINCHECK_grad_ID":1,"n":2}}})"),
                                                       args(R"({"0":{"t":{"_TRAINCHECK_grad_ID":3,"n":2}}})")));
}

TEST(DistinctArgument, OnlineKeepsOnlyRecentStepsAndThoseBeforeTraining) {
  CallTraceText t;
  t.id = 100000;  // call ids apart from the run's
  t.call(kInit, 0, "\"return_values\":{\"NoneType\":null},", "\"args\":{\"0\":{\"int\":-5}},\"kwargs\":{}");
  const std::string without_step = t.text;
  t.text.clear();
  CallTraceText run = seeded_run(100);
  // A call without a step: meta_vars has no "step" key.
  std::string line = without_step;
  for (size_t p; (p = line.find("\"step\":0,")) != std::string::npos;) line.erase(p, 9);
  const TraceStore s = store("s", CallTraceText{line + run.text, run.time, run.id});
  DistinctArgumentOnlineCheck check(kInit, std::nullopt);
  std::vector<OnlineViolation> violations;
  for (const Record& r : s.records()) check.on_record(r, violations);
  EXPECT_TRUE(violations.empty());
  // Steps 91..99 (9 steps, 2 calls each) and the call before training.
  EXPECT_EQ(check.kept_calls(), 2u * (DistinctArgumentOnlineCheck::kStepsKept + 1) + 1u);
}
