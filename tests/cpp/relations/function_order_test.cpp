#include "relations/function_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "case_trace.h"
#include "trace/trace_reader.h"

using namespace traincheck;

namespace {

// Not torch.nn.Module's train/eval: the original skips every torch.nn.Module method for analysis.
constexpr const char* kTrain = "trainer.Trainer.train_mode";
constexpr const char* kEval = "trainer.Trainer.eval_mode";
constexpr const char* kStep = "torch.optim.sgd.SGD.step";

// JSONL of API calls on one thread: a pre-record and a post per call. (Traces for inference and checks
// are relation cases: tests/cpp/data/relation_cases/function_order.)
struct Text {
  std::string text;
  int64_t time = 1000;
  int next_id = 0;
  int step = 0;

  std::string head(const std::string& id, const std::string& fn, const std::string& type) const {
    return "{\"func_call_id\":\"" + id + "\",\"thread_id\":7,\"process_id\":1,\"meta_vars\":{\"step\":" + std::to_string(step) +
           ",\"stage\":\"training\"},\"type\":\"" + type + "\",\"function\":\"" + fn + "\",\"is_bound_method\":true,\"obj_id\":5,";
  }
  void call(const std::string& fn) {
    const std::string id = "c" + std::to_string(next_id++);
    text += head(id, fn, "function_call (pre)") + "\"args\":{},\"kwargs\":{},\"time\":" + std::to_string(time++) + "}\n";
    text += head(id, fn, "function_call (post)") + "\"return_values\":{\"NoneType\":null},\"time\":" + std::to_string(time++) + "}\n";
  }
};

// Epochs of: train(), two optimizer steps, eval(); the run ends by restoring train mode.
Text epochs(int n) {
  Text t;
  for (int e = 0; e < n; ++e) {
    t.step = e;
    t.call(kTrain);
    t.call(kStep);
    t.call(kStep);
    t.call(kEval);
  }
  t.call(kTrain);
  return t;
}

TraceStore store(const std::string& name, const Text& t) { return TraceStore(name, read_trace_text(name, t.text)); }

}  // namespace

TEST(FunctionOrder, HotFunctionsAreNoCandidatesAndSkippedNamesNeither) {
  Text t = epochs(3);
  for (int i = 0; i < 3; ++i) t.call("torch.cuda.synchronize");  // 6 records in a row
  t.call("torch.nn.functional.relu");                              // skipped for analysis
  t.call("torch.nn.modules.module.Module.train");                  // skipped too
  const TraceStore s = store("t", t);
  const std::vector<std::string_view> pool = FunctionOrderRelation::candidate_functions(s);
  EXPECT_EQ(pool, (std::vector<std::string_view>{kStep, kEval, kTrain}));
}

// Inference and checks of a function called once per run: relation_cases/function_order/called_once_per_run.
TEST(FunctionOrder, RareFunctionsStayInThePool) {
  // Only long runs of records leave the pool: train_mode() and eval_mode(), called once, are candidates.
  const TraceStore run1 = load_case_trace("function_order/called_once_per_run/infer/run1.jsonl");
  const std::vector<std::string_view> pool = FunctionOrderRelation::candidate_functions(run1);
  EXPECT_NE(std::find(pool.begin(), pool.end(), kTrain), pool.end());
  EXPECT_NE(std::find(pool.begin(), pool.end(), kEval), pool.end());
}
