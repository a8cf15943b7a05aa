// Inference and checking agree: a trace checked against the invariants inferred from it alone gives no
// violation, for every relation. An invariant says "every example of the training runs satisfies
// this"; a violation on the very run it was learned from means the checker judged records, pairs or
// states that inference never saw as examples, or judged them by another rule.
//
// Runs over every trace the C++ tests have: the e2e folders (tests/cpp/data/e2e), synthetic runs of
// testing/synthetic_trace.cpp (bug injections included: a buggy run is still consistent with itself),
// and the variable and call patterns written below. More folders (real traces) can be added with
// TC_SELF_CHECK_TRACES=dir1:dir2:...
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "check/checker.h"
#include "infer/engine.h"
#include "relations/registry.h"
#include "testing/synthetic_trace.h"
#include "trace/trace_reader.h"
#include "trace/trace_store.h"

namespace fs = std::filesystem;
using namespace traincheck;

namespace {

const fs::path kData = fs::path(TC_TEST_DATA_DIR) / "e2e";

// "<relation>: <text> at step s (n violations)" for every invariant the trace violates.
std::vector<std::string> self_check_failures(const TraceStore& trace) {
  InferOptions options;
  options.threads = 2;
  const InferResult inferred = infer_invariants({&trace}, implemented_relations(), options);
  const TraceCheckReport report = check_trace(trace, inferred.invariants, CheckOptions{}, 2);
  std::vector<std::string> out;
  for (const InvariantOutcome& o : report.outcomes) {
    if (o.result.passed()) continue;
    const std::vector<int64_t> steps = violation_steps(trace, o);
    out.push_back(o.invariant->relation + ": " + o.invariant->text_description.str() + " at step " +
                  (steps.empty() ? std::string("?") : std::to_string(steps.front())) + " (" +
                  std::to_string(o.result.violation_count) + " violations)");
  }
  return out;
}

void expect_self_consistent(const TraceStore& trace) {
  const std::vector<std::string> failures = self_check_failures(trace);
  std::string all;
  for (const std::string& f : failures) all += "  " + f + "\n";
  EXPECT_TRUE(failures.empty()) << trace.name() << " violates " << failures.size() << " of its own invariants:\n" << all;
}

TraceStore synthetic(const std::string& name, const SyntheticTraceSpec& spec) {
  const fs::path dir = fs::temp_directory_path() / ("tc_self_check_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  write_synthetic_trace(dir.string(), spec);
  TraceStore t = TraceStore::load_folder(dir.string());
  fs::remove_all(dir);
  return t;
}

TraceStore from_text(const std::string& name, const std::string& text) { return TraceStore(name, read_trace_text(name, text)); }

// State records of variables, one line per (step, variable): `attributes` is the JSON object body.
struct VarText {
  std::string text;
  void state(int step, const std::string& name, const std::string& type, const std::string& attributes) {
    text += R"({"var_name":")" + name + R"(","var_type":")" + type + R"(","process_id":1,"thread_id":1,"meta_vars":{"step":)" +
            std::to_string(step) + R"(,"stage":"training"},"type":"state_change","attributes":{)" + attributes +
            R"(},"time":)" + std::to_string(step * 100) + "}\n";
  }
  TraceStore store(const std::string& name) const { return from_text(name, text); }
};

}  // namespace

TEST(SelfCheck, EndToEndFolders) {
  for (const char* folder : {"good_run1", "good_run2", "buggy_run"}) expect_self_consistent(TraceStore::load_folder((kData / folder).string()));
}

TEST(SelfCheck, SyntheticRuns) {
  SyntheticTraceSpec plain;
  expect_self_consistent(synthetic("plain", plain));
  SyntheticTraceSpec bugs;
  bugs.iterations = 12;
  bugs.eval_every = 3;
  bugs.skip_foreach_add_at = 5;
  bugs.skip_zero_grad_reset_at = 8;
  bugs.legacy_prefix = true;
  expect_self_consistent(synthetic("bugs", bugs));
  SyntheticTraceSpec no_eval;
  no_eval.iterations = 4;
  no_eval.params = 1;
  no_eval.eval_every = 0;
  expect_self_consistent(synthetic("no_eval", no_eval));
}

TEST(SelfCheck, RealTracesFromTheEnvironment) {
  const char* env = std::getenv("TC_SELF_CHECK_TRACES");
  if (env == nullptr) GTEST_SKIP() << "set TC_SELF_CHECK_TRACES=dir1:dir2:... to check real traces";
  std::stringstream list(env);
  for (std::string folder; std::getline(list, folder, ':');) expect_self_consistent(TraceStore::load_folder(folder));
}

TEST(SelfCheck, StatesBeforeTrainingAreJudgedAsInferenceSawThem) {
  // Parameters' first states (their values at construction) are not examples: p0 and p1, frozen for
  // steps 2-3 and 5-6, agree on requires_grad afterwards. p2, never frozen, has only its first state,
  // which overlaps their frozen states: it must not be judged either.
  VarText t;
  for (int step = 1; step <= 6; ++step)
    for (const char* name : {"p0", "p1", "p2"}) {
      const bool frozen = std::string(name) != "p2" && step != 1 && step != 4;
      t.state(step, name, "torch.nn.Parameter", std::string(R"("requires_grad":)") + (frozen ? "false" : "true"));
    }
  expect_self_consistent(t.store("frozen_for_a_while"));
}

TEST(SelfCheck, StatePairsArePreconditionedOnTheSameRecordsInInferenceAndCheck) {
  // x and y agree on `data` in the states that begin at phase 0 and end at phase 1, and disagree in
  // the one that begins at phase 1 and ends at phase 0: a precondition on `phase` learned from one end
  // of each state must be checked on that same end.
  const int data_x[] = {1, 1, 2, 2, 4, 4}, data_y[] = {1, 1, 3, 3, 4, 4}, phase[] = {0, 1, 1, 0, 0, 1};
  VarText t;
  for (int i = 0; i < 6; ++i) {
    t.state(i + 1, "x", "mylib.Thing", R"("data":)" + std::to_string(data_x[i]) + R"(,"phase":)" + std::to_string(phase[i]));
    t.state(i + 1, "y", "mylib.Thing", R"("data":)" + std::to_string(data_y[i]) + R"(,"phase":)" + std::to_string(phase[i]));
  }
  expect_self_consistent(t.store("phases"));
}

TEST(SelfCheck, CallsThatChangeAVariableOtherwiseAreJudgedAsTheCheckWill) {
  // mylib.Stepper.advance changes the counter 1 -> 2 in its first two calls and 5 -> 6 in the next two.
  // The calls with the other change are negatives of "advance changes 1 -> 2", since the check judges
  // them (the original leaves them out of the examples, and its check then flags them).
  std::string text;
  int64_t time = 0;
  auto state = [&](int step, int value) {
    text += R"({"var_name":"c","var_type":"mylib.Counter","process_id":1,"thread_id":1,"meta_vars":{"step":)" + std::to_string(step) +
            R"(,"stage":"training"},"type":"state_change","attributes":{"value":)" + std::to_string(value) +
            R"(},"time":)" + std::to_string(++time) + "}\n";
  };
  auto call = [&](int step, const std::string& type) {
    text += R"({"func_call_id":"a)" + std::to_string(step) + R"(","thread_id":1,"process_id":1,"meta_vars":{"step":)" +
            std::to_string(step) + R"(,"stage":"training"},"type":"function_call )" + type +
            R"(","function":"mylib.Stepper.advance","is_bound_method":true,"obj_id":1,"args":{},"kwargs":{},"time":)" +
            std::to_string(++time) + "}\n";
  };
  const int before[] = {1, 1, 5, 5}, after[] = {2, 2, 6, 6};
  for (int step = 1; step <= 4; ++step) {
    state(step, before[step - 1]);
    call(step, "(pre)");
    state(step, after[step - 1]);
    call(step, "(post)");
  }
  expect_self_consistent(from_text("stepper", text));
}
