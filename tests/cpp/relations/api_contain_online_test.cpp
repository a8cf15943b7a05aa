// The online APIContain check must give exactly the offline check's violations when a trace's records
// are fed as a live reader delivers them (per file in file order, files merged by time).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <tuple>

#include "invariant/precondition.h"
#include "relations/api_contain.h"
#include "relations/registry.h"
#include "testing/synthetic_trace.h"
#include "trace/json_parse.h"
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

// Hand-written single-file traces (one file: file order is the delivery order).
struct Builder {
  std::string text;
  int64_t time = 0;
  void api(const std::string& id, const std::string& type, const std::string& fn, int64_t tid = 1, int step = 1,
           const std::string& extra = "") {
    text += "{\"func_call_id\":\"" + id + "\",\"thread_id\":" + std::to_string(tid) +
            ",\"process_id\":7,\"meta_vars\":{\"step\":" + std::to_string(step) + ",\"stage\":\"training\"},\"type\":\"" + type +
            "\",\"function\":\"" + fn + "\",\"is_bound_method\":true,\"obj_id\":99," + extra + "\"time\":" + std::to_string(++time) + "}\n";
  }
  void pre(const std::string& id, const std::string& fn, int64_t tid = 1, int step = 1, const std::string& extra = "") {
    api(id, "function_call (pre)", fn, tid, step, extra);
  }
  void post(const std::string& id, const std::string& fn, int64_t tid = 1) { api(id, "function_call (post)", fn, tid); }
  void raise(const std::string& id, const std::string& fn, int64_t tid = 1) {
    api(id, "function_call (post) (exception)", fn, tid, 1, "\"exception\":\"RuntimeError\",\"exception_msg\":\"x\",");
  }
  void leaf(const std::string& id, const std::string& fn, int64_t tid = 1, const std::string& extra = "") {
    pre(id, fn, tid, 1, extra);
    post(id, fn, tid);
  }
  void var(const std::string& name, const std::string& grad, int64_t pid = 7, int64_t tid = 1) {
    text += "{\"var_name\":\"" + name + "\",\"var_type\":\"torch.nn.Parameter\",\"process_id\":" + std::to_string(pid) +
            ",\"thread_id\":" + std::to_string(tid) + ",\"meta_vars\":{\"step\":1},\"type\":\"state_change\",\"attributes\":{\"grad\":" +
            grad + "},\"time\":" + std::to_string(++time) + "}\n";
  }
  RawTrace raw() const {
    std::ostringstream warnings;
    ReadOptions opt;
    opt.warnings = &warnings;
    return read_trace_text("t.log", text, opt);
  }
  TraceStore store(ApiSignatures sigs = {}) const {
    std::ostringstream warnings;
    return TraceStore("t", raw(), std::move(sigs), &warnings);
  }
};

std::vector<std::string> ids(const std::vector<Found>& found) {
  std::vector<std::string> out;
  for (const Found& f : found) out.push_back(std::get<3>(f));
  std::sort(out.begin(), out.end());
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

TEST(ApiContainOnline, ExceptionsNestingThreadsAndLostPostsAsOffline) {
  Builder b;
  b.pre("p1", "P"); b.leaf("c1", "C"); b.post("p1", "P");                 // contains C
  b.pre("p2", "P"); b.leaf("c2", "C"); b.raise("p2", "P");                // raises after C: still checked, passes
  b.pre("p3", "P"); b.raise("p3", "P");                                   // raises without C: violation
  b.pre("p4", "P"); b.pre("c4", "C"); b.raise("c4", "C"); b.post("p4", "P");  // the child raised: not a match
  b.pre("p5", "P"); b.pre("x5", "X"); b.leaf("c5", "C"); b.post("x5", "X"); b.post("p5", "P");  // depth 2
  b.pre("p6", "P"); b.leaf("c6", "C", /*tid=*/2); b.post("p6", "P");      // C on another thread
  b.pre("p7", "P"); b.pre("p7i", "P"); b.leaf("c7", "C"); b.post("p7i", "P"); b.post("p7", "P");  // nested, both pass
  b.pre("p8", "P"); b.pre("p8i", "P"); b.post("p8i", "P"); b.leaf("c8", "C"); b.post("p8", "P");  // inner fails
  b.pre("p9", "P"); b.pre("c9", "C"); b.post("p9", "P");                  // C's post lost: dropped, violation
  b.pre("p10", "P"); b.pre("p10i", "P"); b.leaf("c10", "C"); b.post("p10", "P");  // inner P's post lost: dropped
  b.pre("p11", "P"); b.leaf("c11", "C");                                  // never closes: incomplete
  const TraceStore store = b.store();
  const RawTrace raw = b.raw();

  const Invariant returns = contain("P", Param::api("C"));
  const std::vector<Found> expected = offline(store, returns);
  EXPECT_EQ(ids(expected), (std::vector<std::string>{"p3", "p4", "p6", "p8i", "p9"}));
  const OnlineRun run = run_online(raw, returns);
  EXPECT_EQ(run.found, expected);
  // Only the incomplete p11 is still open (the store leaves it Incomplete and unchecked).
  EXPECT_EQ(run.check->open_calls(), 1u);

  // A child with `exception` set matches only calls that raised.
  Param raising = Param::api("C");
  raising.exception = Value::string("RuntimeError");
  const Invariant raises = contain("P", raising);
  const std::vector<Found> expected_raises = offline(store, raises);
  EXPECT_EQ(ids(expected_raises), (std::vector<std::string>{"p1", "p10", "p2", "p3", "p5", "p6", "p7", "p7i", "p8", "p8i", "p9"}));
  EXPECT_EQ(run_online(raw, raises).found, expected_raises);
}

TEST(ApiContainOnline, VarChangesCountInTheCallsProcessWithinItsInterval) {
  Builder b;
  b.var("w", "1");                                 // first state: not a change
  b.pre("p1", "P"); b.var("w", "null", 7, 2); b.post("p1", "P");  // changed on another thread of the process: counts
  b.var("w", "2");                                 // a change between calls
  b.pre("p2", "P"); b.var("w", "2"); b.post("p2", "P");           // same value: no change
  b.pre("p3", "P"); b.var("w", "null", 8); b.post("p3", "P");     // another process (its first state, too)
  b.pre("p4", "P"); b.var("w", "NaN"); b.post("p4", "P");         // NaN forms no state
  b.pre("p5", "P"); b.var("v", "3"); b.var("v", "null"); b.post("p5", "P");  // a fresh variable changing inside
  b.pre("p6", "P"); b.var("w", "null"); b.var("w", "5"); b.post("p6", "P");  // 2 -> null counts, null -> 5 does not
  b.pre("p7", "P"); b.var("w", "null", 8); b.var("w", "0", 8); b.post("p7", "P");  // pid 8: null -> 0, wrong process
  const TraceStore store = b.store();
  const RawTrace raw = b.raw();
  const Invariant inv = contain("P", grad_reset());
  const std::vector<Found> expected = offline(store, inv);
  EXPECT_EQ(ids(expected), (std::vector<std::string>{"p2", "p3", "p4", "p7"}));
  const OnlineRun run = run_online(raw, inv);
  EXPECT_EQ(run.found, expected);
  EXPECT_EQ(run.check->open_calls(), 0u);
  EXPECT_EQ(run.check->tracked_vars(), 3u);  // (7, w), (7, v), (8, w)

  // A VarNameParam child restricts the change to one variable, and judges only calls that end after
  // the variable was first recorded in their process: v appears inside p5, so p1-p4 are not judged.
  Param named = grad_reset();
  named.type = ParamType::VarName;
  named.var_name = Name("v");
  const Invariant only_v = contain("P", named);
  const std::vector<Found> expected_v = offline(store, only_v);
  EXPECT_EQ(ids(expected_v), (std::vector<std::string>{"p6", "p7"}));
  EXPECT_EQ(online(raw, only_v), expected_v);
}

TEST(ApiContainOnline, ArgumentConstraintsBindThroughTheSameSignatures) {
  Builder b;
  b.pre("p1", "P");
  b.leaf("c1", "C", 1, "\"args\":{\"0\":{\"Foo\":{}},\"1\":{\"int\":2}},\"kwargs\":{},");
  b.post("p1", "P");
  b.pre("p2", "P");
  b.leaf("c2", "C", 1, "\"args\":{\"0\":{\"Foo\":{}}},\"kwargs\":{\"alpha\":{\"int\":3}},");
  b.post("p2", "P");
  Value root;
  std::string error;
  ASSERT_TRUE(parse_json(R"({"C": {"params": [{"name": "self"}, {"name": "alpha"}]}})", root, error)) << error;
  const ApiSignatures sigs = ApiSignatures::from_value(root, "api_signatures.json");
  Param child = Param::api("C");
  child.arguments = make_object({{"args", make_object({{"alpha", make_object({{"int", Value::integer(2)}})}})}, {"func_name", Value::string("C")}});
  const Invariant inv = contain("P", child);

  const std::vector<Found> with_sigs = offline(b.store(sigs), inv);
  EXPECT_EQ(ids(with_sigs), std::vector<std::string>{"p2"});
  EXPECT_EQ(online(b.raw(), inv, &sigs), with_sigs);
  // Without signatures positional argument 1 keeps its index as name, so alpha is never bound.
  const std::vector<Found> without = offline(b.store(), inv);
  EXPECT_EQ(ids(without), (std::vector<std::string>{"p1", "p2"}));
  EXPECT_EQ(online(b.raw(), inv), without);
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

TEST(ApiContainOnline, InvariantsOfflineCannotEvaluateAreIgnored) {
  Builder b;
  b.pre("p1", "P");
  b.post("p1", "P");
  Invariant inv;
  inv.relation = "APIContainRelation";
  inv.params = {Param::api("P")};
  EXPECT_TRUE(offline(b.store(), inv).empty());
  EXPECT_TRUE(online(b.raw(), inv).empty());
}
