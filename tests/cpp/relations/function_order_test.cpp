#include "relations/function_order.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "infer/engine.h"
#include "trace/trace_reader.h"

using namespace traincheck;

namespace {

// Not torch.nn.Module's train/eval: the original skips every torch.nn.Module method for analysis.
constexpr const char* kTrain = "trainer.Trainer.train_mode";
constexpr const char* kEval = "trainer.Trainer.eval_mode";
constexpr const char* kStep = "torch.optim.sgd.SGD.step";

// JSONL of API calls on threads, with nesting: open() writes a pre-record, close() its post.
struct Text {
  std::string text;
  int64_t time = 1000;
  int next_id = 0;
  int step = 0;
  int thread = 7;
  struct Open {
    std::string id, fn;
    int thread;
  };
  std::vector<Open> stack;

  std::string head(const std::string& id, const std::string& fn, int tid, const std::string& type) const {
    return "{\"func_call_id\":\"" + id + "\",\"thread_id\":" + std::to_string(tid) + ",\"process_id\":1,\"meta_vars\":{\"step\":" +
           std::to_string(step) + ",\"stage\":\"training\"},\"type\":\"" + type + "\",\"function\":\"" + fn +
           "\",\"is_bound_method\":true,\"obj_id\":5,";
  }
  void open(const std::string& fn) {
    const std::string id = "c" + std::to_string(next_id++);
    text += head(id, fn, thread, "function_call (pre)") + "\"args\":{},\"kwargs\":{},\"time\":" + std::to_string(time++) + "}\n";
    stack.push_back({id, fn, thread});
  }
  void close(bool raised = false) {
    const Open o = stack.back();
    stack.pop_back();
    text += head(o.id, o.fn, o.thread, raised ? "function_call (post) (exception)" : "function_call (post)") +
            (raised ? "\"exception\":\"RuntimeError\",\"exception_msg\":\"x\"," : "\"return_values\":{\"NoneType\":null},") +
            "\"time\":" + std::to_string(time++) + "}\n";
  }
  void call(const std::string& fn) {
    open(fn);
    close();
  }
};

// Epochs of: train(), two optimizer steps, eval(); `skip_train_at` leaves train() out of that epoch.
// The run ends by restoring train mode unless `end_in_eval`.
Text epochs(int n, int skip_train_at = -1, bool end_in_eval = false) {
  Text t;
  for (int e = 0; e < n; ++e) {
    t.step = e;
    if (e != skip_train_at) t.call(kTrain);
    t.call(kStep);
    t.call(kStep);
    t.call(kEval);
  }
  if (!end_in_eval) t.call(kTrain);
  return t;
}

TraceStore store(const std::string& name, const Text& t) { return TraceStore(name, read_trace_text(name, t.text)); }

Invariant pair_invariant(const char* relation, const char* first, const char* second) {
  Invariant inv;
  inv.relation = relation;
  inv.params = {Param::api(first), Param::api(second)};
  return inv;
}

const FunctionOrderRelation kCover(FunctionOrder::Cover);
const FunctionOrderRelation kLead(FunctionOrder::Lead);

const Invariant* find(const std::vector<Invariant>& invs, const char* relation, const char* first, const char* second) {
  for (const Invariant& inv : invs)
    if (inv.relation == relation && inv.params.size() == 2 && inv.params[0].api_full_name == first &&
        inv.params[1].api_full_name == second)
      return &inv;
  return nullptr;
}

std::vector<OnlineViolation> run_online(const FunctionOrderRelation& rel, const TraceStore& t, const Invariant& inv,
                                        bool* triggered = nullptr) {
  std::unique_ptr<OnlineCheck> check = rel.make_online_check(inv);
  std::vector<OnlineViolation> violations;
  for (const Record& r : t.records()) check->on_record(r, violations);
  if (triggered) *triggered = check->triggered();
  return violations;
}

std::vector<int64_t> offline_steps(const TraceStore& t, const CheckResult& r) {
  std::vector<int64_t> out;
  for (const Violation& v : r.violations) out.push_back(t.record(v.records[0]).step);
  return out;
}

std::vector<int64_t> online_steps(const std::vector<OnlineViolation>& vs) {
  std::vector<int64_t> out;
  for (const OnlineViolation& v : vs) out.push_back(v.records[0].step);
  return out;
}

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

TEST(FunctionOrder, TrainBeforeEachEvalAndTrainBetweenEvalsAreLearned) {
  const TraceStore good = store("good", epochs(5));
  const InferResult result = infer_invariants({&good}, {&kCover, &kLead}, InferOptions{});
  const Invariant* cover = find(result.invariants, "FunctionCoverRelation", kTrain, kEval);
  ASSERT_NE(cover, nullptr);
  EXPECT_EQ(to_json(cover->precondition->to_value()),
            R"({"func_cover":{"inverted":false,"preconditions":[{"clauses":"Unconditional"}]}})");
  EXPECT_NE(find(result.invariants, "FunctionLeadRelation", kEval, kTrain), nullptr);
  // eval() is not before every step(): the second step of an epoch follows the first, and the examples
  // differ in no field a precondition could use.
  EXPECT_EQ(find(result.invariants, "FunctionCoverRelation", kEval, kStep), nullptr);
  // And a good run checks clean against everything learned.
  const TraceStore again = store("again", epochs(7));
  for (const Invariant& inv : result.invariants) {
    const Relation& rel = inv.relation == "FunctionCoverRelation" ? static_cast<const Relation&>(kCover) : kLead;
    const CheckResult r = rel.check(again, inv, {});
    EXPECT_TRUE(r.passed()) << inv.text_description;
    EXPECT_TRUE(r.triggered) << inv.text_description;
  }
}

TEST(FunctionOrder, MissingTrainIsFoundAtItsEpochOfflineAndOnline) {
  const TraceStore bad = store("bad", epochs(6, 3));
  const Invariant cover = pair_invariant("FunctionCoverRelation", kTrain, kEval);
  const CheckResult offline = kCover.check(bad, cover, {});
  EXPECT_EQ(offline_steps(bad, offline), std::vector<int64_t>{3});
  ASSERT_EQ(offline.violations[0].records.size(), 2u);  // this eval, the previous one
  EXPECT_EQ(bad.record(offline.violations[0].records[1]).step, 2);
  bool triggered = false;
  const std::vector<OnlineViolation> online = run_online(kCover, bad, cover, &triggered);
  EXPECT_TRUE(triggered);
  EXPECT_EQ(online_steps(online), std::vector<int64_t>{3});
  ASSERT_EQ(online[0].records.size(), 2u);
  EXPECT_EQ(online[0].records[1].step, 2);

  // Lead [eval, train]: the eval of epoch 2 is not followed by train before epoch 3's eval.
  const Invariant lead = pair_invariant("FunctionLeadRelation", kEval, kTrain);
  EXPECT_EQ(offline_steps(bad, kLead.check(bad, lead, {})), std::vector<int64_t>{3});
  EXPECT_EQ(online_steps(run_online(kLead, bad, lead)), std::vector<int64_t>{3});
}

TEST(FunctionOrder, TheLastCallOfTheLeaderHasNoWindowButAnOnlyCallIsJudgedToTheEnd) {
  // Lead [eval, train] on a run that ends in eval(): the last eval has no next one to bound its window.
  const Invariant lead = pair_invariant("FunctionLeadRelation", kEval, kTrain);
  const TraceStore t = store("t", epochs(4, -1, /*end_in_eval=*/true));
  EXPECT_TRUE(kLead.check(t, lead, {}).passed());
  EXPECT_TRUE(run_online(kLead, t, lead).empty());
  // A thread's only eval() is judged as the original does: some train() returns after it returned.
  // Online its window never closes.
  const TraceStore once = store("once", epochs(1, -1, /*end_in_eval=*/true));
  const CheckResult offline = kLead.check(once, lead, {});
  EXPECT_EQ(offline_steps(once, offline), std::vector<int64_t>{0});
  EXPECT_EQ(offline.violations[0].records.size(), 1u);
  EXPECT_TRUE(run_online(kLead, once, lead).empty());
  EXPECT_TRUE(kLead.check(store("once_then_train", epochs(1)), lead, {}).passed());
}

TEST(FunctionOrder, NestedCallsAndRaisingInnerCallsFailOfflineAndOnlineAlike) {
  Text t;
  t.step = 0;
  t.call(kTrain);
  t.call(kEval);  // ok
  t.step = 1;
  t.open(kTrain);
  t.close(/*raised=*/true);  // a train() that raised does not cover the next eval
  t.call(kEval);
  t.step = 2;
  t.call(kTrain);
  t.open(kEval);
  t.call(kEval);  // nested in the previous eval: fails
  t.close();
  t.step = 3;
  t.call(kTrain);  // train between the nested evals' end and this one: ok
  t.call(kEval);
  const TraceStore s = store("s", t);
  const Invariant cover = pair_invariant("FunctionCoverRelation", kTrain, kEval);
  EXPECT_EQ(offline_steps(s, kCover.check(s, cover, {})), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(online_steps(run_online(kCover, s, cover)), (std::vector<int64_t>{1, 2}));
}

TEST(FunctionOrder, ThreadsAreJudgedApart) {
  // train() on thread 8 does not cover eval() on thread 7.
  Text t;
  for (int e = 0; e < 3; ++e) {
    t.step = e;
    t.thread = e == 1 ? 8 : 7;
    t.call(kTrain);
    t.thread = 7;
    t.call(kEval);
  }
  const TraceStore s = store("s", t);
  const Invariant cover = pair_invariant("FunctionCoverRelation", kTrain, kEval);
  EXPECT_EQ(offline_steps(s, kCover.check(s, cover, {})), std::vector<int64_t>{1});
  EXPECT_EQ(online_steps(run_online(kCover, s, cover)), std::vector<int64_t>{1});
}

TEST(FunctionOrder, PreconditionDecidesWhichCallsAreJudged) {
  // A precondition that never holds: nothing is judged, nothing triggers.
  const TraceStore bad = store("bad", epochs(4, 2));
  Invariant cover = pair_invariant("FunctionCoverRelation", kTrain, kEval);
  cover.precondition = GroupedPreconditions{};
  cover.precondition->groups.emplace_back("func_cover", PreconditionGroup{});  // empty disjunction: false
  const CheckResult r = kCover.check(bad, cover, {});
  EXPECT_FALSE(r.triggered);
  EXPECT_TRUE(r.passed());
  bool triggered = true;
  EXPECT_TRUE(run_online(kCover, bad, cover, &triggered).empty());
  EXPECT_FALSE(triggered);
}

TEST(FunctionOrder, ChainsAreCheckedPairwise) {
  // [train, step, eval]: train before each step, step before each eval; epoch 2 has no train.
  const TraceStore bad = store("bad", epochs(4, 2));
  Invariant chain;
  chain.relation = "FunctionCoverRelation";
  chain.params = {Param::api(kTrain), Param::api(kStep), Param::api(kEval)};
  // [train, step] fails at the second step of every epoch (the first one closed the window) and at the
  // first step of epoch 2; [step, eval] always holds. A chain's violations are its pairs'.
  const Invariant train_step = pair_invariant("FunctionCoverRelation", kTrain, kStep);
  const CheckResult pair = kCover.check(bad, train_step, {});
  const CheckResult whole = kCover.check(bad, chain, {});
  EXPECT_EQ(whole.violation_count, pair.violation_count);
  EXPECT_EQ(offline_steps(bad, whole), offline_steps(bad, pair));
  EXPECT_EQ(online_steps(run_online(kCover, bad, chain)), offline_steps(bad, pair));
  EXPECT_FALSE(kCover.display_name(chain).empty());
}

TEST(FunctionOrder, AFunctionCalledOncePerRunIsLearnedFromTwoRuns) {
  // One epoch per run: train() and eval() are called once each, so each run holds one example of
  // Cover [train, eval]. Rare functions stay in the pool (only long runs of records leave it), and two
  // runs' examples together pass the engine's "more than one positive" bar, as in the original.
  const TraceStore run1 = store("run1", epochs(1, -1, /*end_in_eval=*/true));
  const TraceStore run2 = store("run2", epochs(1, -1, /*end_in_eval=*/true));
  const std::vector<std::string_view> pool = FunctionOrderRelation::candidate_functions(run1);
  EXPECT_NE(std::find(pool.begin(), pool.end(), kTrain), pool.end());
  EXPECT_NE(std::find(pool.begin(), pool.end(), kEval), pool.end());
  const InferResult result = infer_invariants({&run1, &run2}, {&kCover, &kLead}, InferOptions{});
  const Invariant* cover = find(result.invariants, "FunctionCoverRelation", kTrain, kEval);
  ASSERT_NE(cover, nullptr);
  EXPECT_EQ(cover->num_positive_examples, 2);
  EXPECT_EQ(cover->num_negative_examples, 0);
  // A run that evaluates before any train() is caught at that eval.
  Text bad;
  bad.step = 0;
  bad.call(kEval);
  bad.step = 1;
  bad.call(kTrain);
  bad.call(kStep);
  bad.call(kEval);
  const TraceStore b = store("bad", bad);
  EXPECT_EQ(offline_steps(b, kCover.check(b, *cover, {})), std::vector<int64_t>{0});
}
