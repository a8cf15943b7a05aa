// The APIContain check fed a trace's records as a live reader delivers them (per file in file order, files
// merged by time, every state record) must give exactly the offline check's violations: the same check
// replayed over the store, fed only the child attribute's state starts (relations/replay_check.h).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <tuple>

#include "case_trace.h"
#include "invariant/precondition.h"
#include "relations/api_contain.h"
#include "relations/registry.h"
#include "testing/synthetic_trace.h"
#include "trace/trace_reader.h"

namespace fs = std::filesystem;
using namespace traincheck;

namespace {

// What identifies a reported parent call: its pre-record's place and step.
using Found = std::tuple<uint32_t, uint32_t, int64_t, std::string>;  // file, line, step, func_call_id

Found found_of(const Record& r) { return {r.file, r.line, r.step, std::string(r.func_call_id())}; }

std::vector<Found> offline(const TraceStore& t, const Invariant& inv) {
  std::vector<Found> out;
  for (const Violation& v : ApiContainRelation().check(t, inv, {}).violations) out.push_back(found_of(t.record(v.records.at(0))));
  std::sort(out.begin(), out.end());
  return out;
}

struct OnlineRun {
  std::vector<Found> found;
  std::unique_ptr<ApiContainOnlineCheck> check;
  size_t max_open = 0;  // the most open calls tracked at once
};

// Feeds records file by file in each file's order, merging the files by time (ties: lower file first),
// which is what a live reader with the original's min_read_time gate delivers.
OnlineRun run_online(const RawTrace& raw, const Invariant& inv, const ApiSignatures* sigs = nullptr) {
  OnlineRun run;
  run.check = std::make_unique<ApiContainOnlineCheck>(inv, sigs);
  std::vector<std::vector<const Record*>> files(raw.files.size());
  for (const Record& r : raw.records) files.at(r.file).push_back(&r);
  std::vector<size_t> next(files.size(), 0);
  std::vector<OnlineViolation> violations;
  for (;;) {
    size_t best = files.size();
    for (size_t f = 0; f < files.size(); ++f)
      if (next[f] < files[f].size() && (best == files.size() || files[f][next[f]]->time < files[best][next[best]]->time)) best = f;
    if (best == files.size()) break;
    run.check->on_record(*files[best][next[best]++], violations);
    run.max_open = std::max(run.max_open, run.check->open_calls());
  }
  for (const OnlineViolation& v : violations) {
    EXPECT_EQ(v.records.size(), 1u);
    run.found.push_back(found_of(v.records.at(0)));
  }
  std::sort(run.found.begin(), run.found.end());
  return run;
}

// The violations of a trace whose calls all close: nothing may stay tracked afterwards.
std::vector<Found> online(const RawTrace& raw, const Invariant& inv, const ApiSignatures* sigs = nullptr) {
  OnlineRun run = run_online(raw, inv, sigs);
  EXPECT_EQ(run.check->open_calls(), 0u);
  EXPECT_EQ(run.check->tracked_threads(), 0u);
  return std::move(run.found);
}

struct Synthetic {
  RawTrace raw;
  TraceStore store;
};

Synthetic synthetic(const std::string& name, const SyntheticTraceSpec& spec) {
  const fs::path dir = fs::temp_directory_path() / ("tc_api_contain_online_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  write_synthetic_trace(dir.string(), spec);
  Synthetic s{read_trace_files(list_trace_files(dir.string())), TraceStore::load_folder(dir.string())};
  fs::remove_all(dir);
  return s;
}

Invariant contain(const std::string& parent, Param child) {
  Invariant inv;
  inv.relation = "APIContainRelation";
  inv.params = {Param::api(parent), std::move(child)};
  return inv;
}

const std::string kStep = "torch.optim.adam.Adam.step";
const std::string kForeach = "torch._VariableFunctionsClass._foreach_add_";
const std::string kZeroGrad = "torch.optim.optimizer.Optimizer.zero_grad";

Param grad_reset() {
  Param p = Param::var_type_param("torch.nn.Parameter", "grad");
  p.pre_value = Value::string("non_zero");
  p.post_value = Value::null();
  return p;
}

// A trace of a relation case under tests/cpp/data/relation_cases/api_contain/ (one file: its order is the
// delivery order), and the case's invariants.
RawTrace case_raw(const std::string& file) {
  std::ostringstream warnings;
  ReadOptions opt;
  opt.warnings = &warnings;
  return read_trace_text("t.log", slurp_file(kRelationCases / "api_contain" / file), opt);
}

std::vector<Invariant> case_invariants(const std::string& dir) {
  std::vector<Invariant> out;
  std::istringstream in(slurp_file(kRelationCases / "api_contain" / dir / "invariants.jsonl"));
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(invariant_from_json(line));
  return out;
}

}  // namespace

TEST(ApiContainOnline, EveryHypothesisOfAGoodTraceAgreesWithOfflineOnABuggyTrace) {
  SyntheticTraceSpec spec;
  spec.iterations = 6;
  spec.eval_every = 3;
  Synthetic good = synthetic("learn", spec);
  spec.iterations = 9;
  spec.skip_foreach_add_at = 4;
  spec.skip_zero_grad_reset_at = 7;
  spec.detach_first_param_from = 5;
  Synthetic bad = synthetic("bug", spec);
  std::vector<Hypothesis> hs = ApiContainRelation().generate(good.store);
  ASSERT_GE(hs.size(), 5u);
  // Beyond what inference proposes: every function as parent of every function (a call containing
  // itself included), with stages from a real hypothesis.
  for (std::string_view parent : good.store.functions())
    for (std::string_view child : good.store.functions()) {
      Hypothesis h;
      h.invariant = contain(std::string(parent), Param::api(std::string(child)));
      h.invariant.text_description = std::string(parent) + " / " + std::string(child);
      h.valid_stages = {"training"};
      hs.push_back(std::move(h));
    }
  size_t total = 0, with_api_child = 0, with_var_child = 0, with_named_var_child = 0;
  for (const Hypothesis& h : hs) {
    // Without a precondition, and with the stage precondition inference would add
    // (docs/formats.md §Stage restriction).
    Invariant plain = h.invariant;
    Invariant staged = h.invariant;
    PreconditionGroup g = PreconditionGroup::unconditional();
    add_stage_info(g, h.valid_stages);
    staged.precondition = GroupedPreconditions{{{"parent_func_call_pre", g}}};
    for (const Invariant* inv : {&plain, &staged}) {
      const std::vector<Found> expected = offline(bad.store, *inv);
      EXPECT_EQ(online(bad.raw, *inv), expected) << inv->text_description;
      total += expected.size();
      (inv->params[1].type == ParamType::Api ? with_api_child : with_var_child) += expected.size();
      if (inv->params[1].type == ParamType::VarName) with_named_var_child += expected.size();
    }
  }
  // The comparison is not vacuous: both kinds of child produced violations.
  EXPECT_GT(with_api_child, 0u);
  EXPECT_GT(with_var_child, 0u);
  EXPECT_GT(with_named_var_child, 0u);
  EXPECT_GT(total, 0u);
}

TEST(ApiContainOnline, InjectedBugIsReportedAtItsStepAndAGoodTracePasses) {
  SyntheticTraceSpec spec;
  spec.iterations = 6;
  Synthetic good = synthetic("good", spec);
  spec.skip_foreach_add_at = 4;
  Synthetic bad = synthetic("bad", spec);
  const Invariant inv = contain(kStep, Param::api(kForeach));
  const OnlineRun passing = run_online(good.raw, inv);
  EXPECT_TRUE(passing.found.empty());
  EXPECT_TRUE(passing.check->triggered());
  const std::vector<Found> found = online(bad.raw, inv);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(std::get<2>(found[0]), 4);
  EXPECT_EQ(found, offline(bad.store, inv));

  // A generalised var change: step 1 (no grads yet) and the injected step lack the reset.
  spec.skip_foreach_add_at = -1;
  spec.skip_zero_grad_reset_at = 3;
  Synthetic var_bug = synthetic("var_bug", spec);
  const Invariant reset = contain(kZeroGrad, grad_reset());
  const std::vector<Found> resets = online(var_bug.raw, reset);
  ASSERT_EQ(resets.size(), 2u);
  EXPECT_EQ(std::get<2>(resets[0]), 1);
  EXPECT_EQ(std::get<2>(resets[1]), 3);
  EXPECT_EQ(resets, offline(var_bug.store, reset));

  // Reached through the registry, with the precondition deciding which parents are checked.
  Invariant never = inv;
  PreconditionGroup g;
  g.disjuncts.push_back(Conjunction{false, {Clause::make(ClauseType::Constant, "meta_vars.stage", "str", {Value::string("inference")})}});
  never.precondition = GroupedPreconditions{{{"parent_func_call_pre", g}}};
  std::unique_ptr<OnlineCheck> generic = find_relation("APIContainRelation")->make_online_check(never);
  ASSERT_NE(generic, nullptr);
  std::vector<OnlineViolation> violations;
  for (const Record& r : bad.store.records()) generic->on_record(r, violations);
  EXPECT_TRUE(violations.empty());
  EXPECT_FALSE(static_cast<ApiContainOnlineCheck&>(*generic).triggered());
}

TEST(ApiContainOnline, StateStaysBoundedOnALongTrace) {
  SyntheticTraceSpec spec;
  spec.iterations = 1500;
  spec.skip_foreach_add_at = 700;
  Synthetic long_run = synthetic("long", spec);
  const Invariant inv = contain(kStep, Param::api(kForeach));
  const OnlineRun run = run_online(long_run.raw, inv);
  ASSERT_EQ(run.found.size(), 1u);
  EXPECT_EQ(std::get<2>(run.found[0]), 700);
  EXPECT_EQ(run.found, offline(long_run.store, inv));
  EXPECT_LE(run.max_open, 2u);  // Adam.step and its _foreach_add_, never more
  EXPECT_EQ(run.check->open_calls(), 0u);
  EXPECT_EQ(run.check->tracked_threads(), 0u);
  EXPECT_EQ(run.check->tracked_vars(), 0u);

  // A var child remembers one value per tracked variable, however long the run.
  const OnlineRun var_run = run_online(long_run.raw, contain(kZeroGrad, grad_reset()));
  EXPECT_EQ(var_run.found, offline(long_run.store, contain(kZeroGrad, grad_reset())));
  EXPECT_LE(var_run.max_open, 1u);
  EXPECT_EQ(var_run.check->open_calls(), 0u);
  EXPECT_EQ(var_run.check->tracked_vars(), static_cast<size_t>(spec.params));
}

// What the checks of these cases find is in their goldens (relation_cases/api_contain/
// exceptions_nesting_threads_and_lost_posts, grad_reset_within_the_call, arguments_bound_by_signatures,
// invariant_without_a_child); here, what the online check still tracks after them.
TEST(ApiContainOnline, OnlineStateAfterTheCases) {
  auto nothing_open = [](const OnlineRun& run, const std::string& what) {
    EXPECT_EQ(run.check->open_calls(), 0u) << what;
    EXPECT_EQ(run.check->tracked_threads(), 0u) << what;
  };
  // Calls whose post was lost (c9, p10i) are dropped when their caller ends: only p11, which never
  // ends, stays open (the store leaves it Incomplete and unchecked).
  const std::string nested = "exceptions_nesting_threads_and_lost_posts";
  for (const Invariant& inv : case_invariants(nested))
    EXPECT_EQ(run_online(case_raw(nested + "/check/calls.jsonl"), inv).check->open_calls(), 1u) << inv.text_description;

  const std::string grads = "grad_reset_within_the_call";
  const std::vector<Invariant> resets = case_invariants(grads);
  ASSERT_EQ(resets.size(), 2u);
  const OnlineRun any = run_online(case_raw(grads + "/check/calls.jsonl"), resets[0]);
  nothing_open(any, grads);
  EXPECT_EQ(any.check->tracked_vars(), 3u);  // (7, w), (7, v), (8, w)
  nothing_open(run_online(case_raw(grads + "/check/calls.jsonl"), resets[1]), grads + " v");

  const std::string args = "arguments_bound_by_signatures";
  const ApiSignatures sigs =
      ApiSignatures::load((kRelationCases / "api_contain" / args / "check/with_signatures.api_signatures.json").string());
  nothing_open(run_online(case_raw(args + "/check/with_signatures.jsonl"), case_invariants(args).at(0), &sigs), args);
  const std::string alone = "invariant_without_a_child";
  nothing_open(run_online(case_raw(alone + "/check/calls.jsonl"), case_invariants(alone).at(0)), alone);
}
