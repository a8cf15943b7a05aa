#include "infer/precondition_learner.h"

#include <gtest/gtest.h>

#include <deque>
#include <sstream>

#include "trace/trace_store.h"

using namespace traincheck;

namespace {

// Single-record examples built from (stage, step, flag) fields.
struct Examples {
  std::deque<Record> records;
  std::vector<ExampleView> make(std::initializer_list<std::tuple<const char*, int, bool>> rows, int64_t process = -1) {
    std::vector<ExampleView> out;
    for (const auto& [stage, step, flag] : rows) {
      Record r;
      if (process >= 0) {  // a run's identities: this process and its main thread
        r.set(intern_key("process_id"), Value::integer(process));
        r.set(intern_key("thread_id"), Value::integer(140000000000 + process));
      }
      r.set(intern_key("meta_vars.stage"), Value::string(stage));
      r.set(intern_key("meta_vars.step"), Value::integer(step));
      r.set(intern_key("meta_vars.flag"), Value::boolean(flag));
      r.set(intern_key("function"), Value::string("f"));
      r.set(intern_key("time"), Value::integer(step));  // not a candidate field
      r.refresh_cached();
      records.push_back(std::move(r));
      out.push_back({RecordView{&records.back(), nullptr}});
    }
    return out;
  }
};

std::string render(const PreconditionGroup& g) { return to_json(g.to_value()); }

}  // namespace

TEST(LocalClauses, ConstantsForEveryCandidateFieldAndNothingForTime) {
  Examples ex;
  auto e = ex.make({{"training", 3, true}});
  std::vector<Clause> local = find_local_clauses(e[0], {});
  std::vector<std::string> props;
  for (const Clause& c : local) props.push_back(c.prop_name + ":" + std::string(clause_type_name(c.type)));
  std::sort(props.begin(), props.end());
  EXPECT_EQ(props, (std::vector<std::string>{"function:constant", "meta_vars.flag:constant", "meta_vars.stage:constant",
                                             "meta_vars.step:constant"}));
  EXPECT_TRUE(find_local_clauses(e[0], {"meta_vars"}).size() == 1u);  // keys to skip are substrings
}

TEST(PreconditionLearner, NoNegativesIsUnconditional) {
  Examples ex;
  PreconditionGroup g = learn_precondition_group(ex.make({{"training", 1, true}, {"training", 2, true}}), {}, {}, {});
  ASSERT_EQ(g.disjuncts.size(), 1u);
  EXPECT_TRUE(g.disjuncts[0].unconditional);
}

TEST(PreconditionLearner, KeptConsistentFieldMakesThePreconditionWhenThereAreNoNegatives) {
  Examples ex;
  const PreconditionKeys keep_step{{}, {"meta_vars.step"}};
  PreconditionGroup g = learn_precondition_group(ex.make({{"training", 1, true}, {"training", 2, true}}), {}, keep_step, {});
  ASSERT_EQ(g.disjuncts.size(), 1u) << render(g);
  ASSERT_FALSE(g.disjuncts[0].unconditional) << render(g);
  ASSERT_EQ(g.disjuncts[0].clauses.size(), 1u) << render(g);
  EXPECT_EQ(g.disjuncts[0].clauses[0].type, ClauseType::Consistent);
  EXPECT_EQ(g.disjuncts[0].clauses[0].prop_name, "meta_vars.step");
  // A single step is a `constant`, which would pin the invariant to that step: not kept.
  PreconditionGroup one_step = learn_precondition_group(ex.make({{"training", 1, true}, {"training", 1, true}}), {}, keep_step, {});
  ASSERT_EQ(one_step.disjuncts.size(), 1u);
  EXPECT_TRUE(one_step.disjuncts[0].unconditional) << render(one_step);
}

TEST(PreconditionLearner, KeptConsistentFieldSurvivesPruningNextToTheSeparatingClause) {
  Examples ex;
  auto pos = ex.make({{"training", 1, true}, {"training", 2, true}, {"training", 3, true}});
  auto neg = ex.make({{"testing", 4, true}, {"testing", 5, true}});
  PreconditionGroup plain = learn_precondition_group(pos, neg, {}, {});
  ASSERT_EQ(plain.disjuncts.size(), 1u);
  EXPECT_EQ(plain.disjuncts[0].clauses.size(), 1u) << render(plain);
  PreconditionGroup kept = learn_precondition_group(pos, neg, PreconditionKeys{{}, {"meta_vars.step"}}, {});
  ASSERT_EQ(kept.disjuncts.size(), 1u);
  std::vector<std::string> props;
  for (const Clause& c : kept.disjuncts[0].clauses) props.push_back(c.prop_name + ":" + std::string(clause_type_name(c.type)));
  std::sort(props.begin(), props.end());
  EXPECT_EQ(props, (std::vector<std::string>{"meta_vars.stage:constant", "meta_vars.step:consistent"})) << render(kept);
  for (const auto& n : neg) EXPECT_FALSE(kept.holds(n)) << render(kept);
}

TEST(PreconditionLearner, SeparatingClauseIsFoundAndNonDiscriminatingOnesPruned) {
  Examples ex;
  auto pos = ex.make({{"training", 1, true}, {"training", 2, true}, {"training", 3, true}});
  auto neg = ex.make({{"testing", 4, true}, {"testing", 5, true}});
  PreconditionGroup g = learn_precondition_group(pos, neg, {}, {});
  EXPECT_FALSE(g.inverted);
  ASSERT_EQ(g.disjuncts.size(), 1u);
  // Only the stage separates: `function` and `flag` never reject a negative and are pruned.
  ASSERT_EQ(g.disjuncts[0].clauses.size(), 1u);
  EXPECT_EQ(g.disjuncts[0].clauses[0].prop_name, "meta_vars.stage");
  EXPECT_EQ(to_json(Value::array(g.disjuncts[0].clauses[0].values)), "[\"training\"]");
  for (const auto& p : pos) EXPECT_TRUE(g.holds(p));
  for (const auto& n : neg) EXPECT_FALSE(g.holds(n));
}

TEST(PreconditionLearner, DisjunctionWhenPositivesSplit) {
  Examples ex;
  auto pos = ex.make({{"training", 1, true}, {"training", 2, true}, {"testing", 3, false}, {"testing", 4, false}});
  auto neg = ex.make({{"training", 5, false}, {"testing", 6, true}});
  PreconditionGroup g = learn_precondition_group(pos, neg, {}, {});
  EXPECT_FALSE(g.inverted);
  EXPECT_EQ(g.disjuncts.size(), 2u) << render(g);
  for (const auto& p : pos) EXPECT_TRUE(g.holds(p)) << render(g);
  for (const auto& n : neg) EXPECT_FALSE(g.holds(n)) << render(g);
}

TEST(PreconditionLearner, InvertedGroupWhenOnlyTheNegativesShareSomething) {
  // Positives differ in every field (several steps, two stages), so nothing they share rejects the
  // negatives; the negatives all sit at step 0, so "not at step 0" is learned as an inverted group.
  Examples ex;
  auto pos = ex.make({{"training", 1, true}, {"training", 2, true}, {"testing", 3, true}, {"checkpointing", 4, true},
                      {"evaluation", 5, true}, {"init", 6, true}});
  auto neg = ex.make({{"training", 0, true}, {"testing", 0, true}});
  PreconditionGroup g = learn_precondition_group(pos, neg, {}, {});
  EXPECT_TRUE(g.inverted) << render(g);
  ASSERT_EQ(g.disjuncts.size(), 1u) << render(g);
  ASSERT_EQ(g.disjuncts[0].clauses.size(), 1u) << render(g);
  EXPECT_EQ(g.disjuncts[0].clauses[0].prop_name, "meta_vars.step");
  for (const auto& p : pos) EXPECT_TRUE(g.holds(p)) << render(g);
  for (const auto& n : neg) EXPECT_FALSE(g.holds(n)) << render(g);
}

TEST(PreconditionLearner, NotFoundWhenPositiveAndNegativeAreIdentical) {
  Examples ex;
  PreconditionGroup g = learn_precondition_group(ex.make({{"training", 1, true}, {"training", 1, true}}),
                                                 ex.make({{"training", 1, true}}), {}, {});
  EXPECT_TRUE(g.disjuncts.empty());
}

TEST(PreconditionLearner, PrunedClausesDoNotLeakIntoTheNextHypothesis) {
  // Hypothesis A: stage never rejects a negative, so it is pruned for A. In the original the pruned
  // set persisted and hypothesis B, which needs exactly that stage clause, found nothing.
  Examples ex;
  auto a_pos = ex.make({{"training", 1, true}, {"training", 2, true}});
  auto a_neg = ex.make({{"training", 3, false}});
  PreconditionGroup a = learn_precondition_group(a_pos, a_neg, {}, {});
  ASSERT_FALSE(a.disjuncts.empty());
  auto b_pos = ex.make({{"training", 1, true}, {"training", 2, true}});
  auto b_neg = ex.make({{"testing", 3, true}});
  PreconditionGroup b = learn_precondition_group(b_pos, b_neg, {}, {});
  ASSERT_EQ(b.disjuncts.size(), 1u) << render(b);
  EXPECT_EQ(b.disjuncts[0].clauses[0].prop_name, "meta_vars.stage");
}

TEST(PreconditionLearner, ManyDistinctNumbersBecomeConsistent) {
  Examples ex;
  auto pos = ex.make({{"training", 1, true}, {"training", 2, true}, {"training", 3, true}});
  // Negatives lack the step field entirely: only `consistent step` (present) rejects them.
  std::deque<Record> extra;
  Record r;
  r.set(intern_key("meta_vars.stage"), Value::string("training"));
  r.set(intern_key("meta_vars.flag"), Value::boolean(true));
  r.set(intern_key("function"), Value::string("f"));
  extra.push_back(r);
  std::vector<ExampleView> neg = {{RecordView{&extra.back(), nullptr}}};
  PreconditionGroup g = learn_precondition_group(pos, neg, {}, {});
  ASSERT_EQ(g.disjuncts.size(), 1u) << render(g);
  ASSERT_EQ(g.disjuncts[0].clauses.size(), 1u) << render(g);
  EXPECT_EQ(g.disjuncts[0].clauses[0].type, ClauseType::Consistent);
}

TEST(PreconditionLearner, SamplingHonoursTheOptions) {
  // find_precondition samples the example lists: with a threshold of 2 the learner sees two steps
  // (a `constant` per step survives only when <= 1 distinct number); disabled, it sees all.
  Hypothesis h;
  h.group_names = {"g"};
  std::ostringstream warnings;
  std::string text;
  for (int i = 1; i <= 20; ++i)
    text += "{\"func_call_id\":\"c" + std::to_string(i) + "\",\"thread_id\":1,\"process_id\":1,\"meta_vars\":{\"step\":" +
            std::to_string(i) + ",\"stage\":\"" + (i == 20 ? "testing" : "training") +
            "\"},\"type\":\"function_call (pre)\",\"function\":\"f\",\"time\":" + std::to_string(i) + "}\n";
  ReadOptions opt;
  opt.warnings = &warnings;
  TraceStore trace("t", read_trace_text("t", text, opt), {}, &warnings);
  for (uint32_t i = 0; i < 19; ++i) h.positives.push_back(Example{&trace, {{i}}});
  h.negatives.push_back(Example{&trace, {{19}}});
  PreconditionOptions on;
  on.sampling_threshold = 1;
  auto sampled = find_precondition(h, {}, on);
  ASSERT_TRUE(sampled);
  PreconditionOptions off;
  off.sampling = false;
  off.sampling_threshold = 1;
  auto full = find_precondition(h, {}, off);
  ASSERT_TRUE(full);
  // Both separate by stage; only the sampled run saw a single positive, so it keeps the step constant.
  const std::string s = to_json(sampled->to_value()), f = to_json(full->to_value());
  EXPECT_NE(s, f);
  EXPECT_NE(f.find("training"), std::string::npos);
}

// A process's or a thread's id is another number in every run: a precondition that holds them as values
// would hold on no other run, or (inverted) exempt one training run's process and hold on every other.
TEST(PreconditionLearner, ARunsProcessAndThreadIdsAreNeverAPreconditionsValues) {
  Examples ex;
  auto pos = ex.make({{"training", 1, true}, {"training", 2, true}}, 100);
  auto neg = ex.make({{"training", 1, true}, {"training", 2, true}}, 200);
  // Only the process tells them apart: nothing that another run could meet.
  EXPECT_TRUE(learn_precondition_group(pos, neg, {}, {}).disjuncts.empty()) << render(learn_precondition_group(pos, neg, {}, {}));
  // Positives in two processes, the negatives in a third: no "except in process 300" either.
  auto spread = ex.make({{"training", 1, true}}, 100);
  for (const ExampleView& e : ex.make({{"training", 2, true}}, 101)) spread.push_back(e);
  auto third = ex.make({{"training", 3, true}, {"training", 4, true}}, 300);
  const PreconditionGroup g = learn_precondition_group(spread, third, {}, {});
  EXPECT_TRUE(g.disjuncts.empty()) << render(g);
  // What does tell them apart is still found, beside the ids.
  auto testing = ex.make({{"testing", 1, true}, {"testing", 2, true}}, 200);
  const PreconditionGroup by_stage = learn_precondition_group(pos, testing, {}, {});
  ASSERT_EQ(by_stage.disjuncts.size(), 1u) << render(by_stage);
  for (const Clause& clause : by_stage.disjuncts[0].clauses)
    EXPECT_FALSE(clause.type == ClauseType::Constant && (clause.prop_name == "process_id" || clause.prop_name == "thread_id"))
        << render(by_stage);
  for (const auto& n : testing) EXPECT_FALSE(by_stage.holds(n)) << render(by_stage);
}
