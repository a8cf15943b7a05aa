#include "relations/consistency.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <tuple>

#include "case_trace.h"
#include "check/online/online_checker.h"
#include "infer/engine.h"
#include "relations/ddp_invariant.h"
#include "relations/registry.h"
#include "trace/trace_reader.h"

namespace fs = std::filesystem;
using namespace traincheck;

namespace {

// A DDP-like trace: every rank writes one state record per parameter per step (the sampler tracker's
// shape: attributes.data is an int digest), ranks slightly apart in time; parameters differ in shape.
struct DdpSpec {
  int ranks = 2;
  int params = 6;
  int steps = 6;
  int diverge_rank = -1;  // bug injection: this rank's parameter 0 differs from step `diverge_from` on
  int diverge_from = -1;
  std::string prefix = "_TRAINCHECK_";
  int64_t base_pid = 1000;
};

std::string ddp_text(const DdpSpec& spec) {
  std::string out;
  for (int step = 0; step < spec.steps; ++step)
    for (int r = 0; r < spec.ranks; ++r)
      for (int p = 0; p < spec.params; ++p) {
        int64_t data = 1000003LL * (p + 1) + 7919LL * step;
        if (r == spec.diverge_rank && p == 0 && step >= spec.diverge_from) data += 424242;
        const int rows = p + 1;
        const int64_t time = 1000000 + step * 10000 + r + p * 2;
        out += "{\"var_name\":\"model." + std::to_string(p) + ".weight\",\"var_type\":\"torch.nn.Parameter\",";
        out += "\"process_id\":" + std::to_string(spec.base_pid + r) + ",\"thread_id\":7,";
        out += "\"meta_vars\":{\"step\":" + std::to_string(step) + ",\"stage\":\"training\",\"_DATA_PARALLEL_RANK\":" +
               std::to_string(r) + "},\"type\":\"state_change\",\"attributes\":{\"" + spec.prefix +
               "data_ID\":" + std::to_string(5000 + 100 * r + p) + ",\"data\":" + std::to_string(data) +
               ",\"dtype\":\"torch.float32\",\"shape\":[" + std::to_string(rows) + ",4],\"ndim\":2,\"nbytes\":" +
               std::to_string(16 * rows) + ",\"requires_grad\":true},\"time\":" + std::to_string(time) + "}\n";
      }
  // A later record (the run goes on after the last step), so the last states have a liveness.
  out += "{\"var_name\":\"end\",\"var_type\":\"Marker\",\"process_id\":" + std::to_string(spec.base_pid) +
         ",\"thread_id\":7,\"meta_vars\":{\"step\":" + std::to_string(spec.steps) +
         ",\"stage\":\"training\"},\"type\":\"state_change\",\"attributes\":{\"x\":1},\"time\":" +
         std::to_string(1000000 + spec.steps * 10000) + "}\n";
  return out;
}

TraceStore ddp_trace(const std::string& name, const DdpSpec& spec) {
  return TraceStore(name, read_trace_text(name, ddp_text(spec)));
}

Invariant real_example() { return invariant_from_json(test_data::kDdpConsistencyInvariant); }

using PairKey = std::tuple<int64_t, std::string, int64_t, int64_t, std::string, int64_t>;  // (pid, name, step) x 2

PairKey key_of(const Record& a, const Record& b) {
  return {a.process_id, std::string(a.var_name), a.step, b.process_id, std::string(b.var_name), b.step};
}

std::vector<OnlineViolation> run_online(const TraceStore& t, const Invariant& inv, ConsistencyOnlineCheck** out = nullptr) {
  static std::unique_ptr<OnlineCheck> keep;
  keep = ConsistencyRelation().make_online_check(inv);
  std::vector<OnlineViolation> violations;
  for (const Record& r : t.records()) keep->on_record(r, violations);
  if (out) *out = static_cast<ConsistencyOnlineCheck*>(keep.get());
  return violations;
}

}  // namespace

TEST(Consistency, IsRegistered) {
  ASSERT_NE(find_relation("ConsistencyRelation"), nullptr);
  EXPECT_EQ(find_relation("ConsistencyRelation")->name(), "ConsistencyRelation");
}

TEST(Consistency, StepEndsHoldEachStepsLastRecordAndTheTolerance) {
  const TraceStore t = TraceStore("t", read_trace_text("t",
      R"({"var_name":"w","var_type":"torch.nn.Parameter","process_id":1,"thread_id":1,"meta_vars":{"step":0},"type":"state_change","attributes":{"data":1},"time":1})" "\n"
      R"({"var_name":"w","var_type":"torch.nn.Parameter","process_id":1,"thread_id":1,"meta_vars":{"step":1},"type":"state_change","attributes":{"data":2},"time":2})" "\n"
      R"({"var_name":"w","var_type":"torch.nn.Parameter","process_id":1,"thread_id":1,"meta_vars":{"step":1},"type":"state_change","attributes":{"data":3},"time":3})" "\n"
      R"({"var_name":"w","var_type":"torch.nn.Parameter","process_id":1,"thread_id":1,"meta_vars":{"step":2},"type":"state_change","attributes":{"data":3},"time":4})" "\n"));
  const AttrHistory* h = t.var_instances().at(0).attr("data");
  ASSERT_NE(h, nullptr);
  const std::vector<ConsistencyRelation::StepEnd> ends = ConsistencyRelation::step_ends(t, *h, true);
  ASSERT_EQ(ends.size(), 3u);
  EXPECT_EQ(ends[0].step, 0);
  EXPECT_FALSE(ends[0].compared);  // the initial state of a parameter
  EXPECT_EQ(t.record(ends[1].record).time, 3);  // step 1 ends with its last record (value 3)
  EXPECT_EQ(h->states[ends[1].state].value, Value::integer(3));
  EXPECT_TRUE(ends[1].compared);
  EXPECT_EQ(ends[2].state, ends[1].state);  // step 2 still holds the same state
  EXPECT_TRUE(ConsistencyRelation::close_values(Value::real(1.0), Value::real(1.0 + 1e-10)));
  EXPECT_FALSE(ConsistencyRelation::close_values(Value::integer(1), Value::integer(2)));
}

// The ends kept: a running end per instance, and the ended steps' ends, at most kKeptEndsPerProcess of them
// per rank unless the last kKeptSteps steps alone hold more.
size_t kept_ends_bound(const DdpSpec& spec) {
  const size_t per_step = static_cast<size_t>(spec.ranks) * spec.params;
  return per_step + std::max(ConsistencyOnlineCheck::kKeptEndsPerProcess * spec.ranks + per_step, static_cast<size_t>(ConsistencyOnlineCheck::kKeptSteps) * per_step);
}

TEST(Consistency, OnlineStateDoesNotGrowWithTheRunsLength) {
  DdpSpec spec;
  spec.prefix = "_ML_DAIKON_";
  spec.steps = 4000;  // 48k ends: past kKeptEndsPerProcess for each of the ranks
  ConsistencyOnlineCheck* check = nullptr;
  EXPECT_TRUE(run_online(ddp_trace("long", spec), real_example(), &check).empty());
  EXPECT_LE(check->tracked_states(), kept_ends_bound(spec));
  // A small model keeps more than kKeptSteps steps: ranks that publish in bursts stay compared.
  EXPECT_GT(check->tracked_states(), static_cast<size_t>(4 * ConsistencyOnlineCheck::kKeptSteps) * spec.ranks * spec.params);
}

// Past kKeptEndsPerProcess the oldest steps' ends are pruned, and their storage is reused by the ends that
// follow (ConsistencyOnlineCheck::spare_ends_): the reused ends hold their own records. A rank diverging
// long after pruning began is found at each of its divergent steps but the last (online, the last step
// never ends), with that step's records and values.
TEST(Consistency, EndsReusingPrunedEndsStorageHoldTheirOwnRecords) {
  DdpSpec spec;
  spec.steps = 3000;  // 36k ends: pruning from about step 2700 (16k a process)
  spec.diverge_rank = 1;
  spec.diverge_from = 2990;
  const std::vector<OnlineViolation> found = run_online(ddp_trace("long_diverge", spec), real_example());
  std::set<int64_t> steps;
  for (const OnlineViolation& v : found) {
    ASSERT_EQ(v.records.size(), 2u);
    const Record& a = v.records[0];
    const Record& b = v.records[1];
    EXPECT_EQ(a.step, b.step);
    EXPECT_GE(a.step, spec.diverge_from);
    EXPECT_NE(a.process_id, b.process_id);
    for (const Record* r : {&a, &b}) {
      EXPECT_EQ(r->get("meta_vars.step")->as_int(), r->step);
      const int64_t base = 1000003LL * (r->var_name == "model.0.weight" ? 1 : 0) + 7919LL * r->step;
      if (r->var_name == "model.0.weight") {
        EXPECT_EQ(r->get("attributes.data")->as_int(), base + (r->process_id == spec.base_pid + 1 ? 424242 : 0));
      }
    }
    steps.insert(a.step);
  }
  std::set<int64_t> expected;
  for (int64_t s = spec.diverge_from; s < spec.steps - 1; ++s) expected.insert(s);
  EXPECT_EQ(steps, expected);
}

// The real example passing on ranks in sync and finding the divergent steps, offline and online:
// relation_cases/consistency/ddp_ranks_in_sync.
TEST(Consistency, MaxViolationsKeepsTheFirstAndCountsAll) {
  const TraceStore bad = load_case_trace("consistency/ddp_ranks_in_sync/check/bad.jsonl");
  CheckOptions one;
  one.max_violations = 1;
  const CheckResult r = ConsistencyRelation().check(bad, real_example(), one);
  EXPECT_EQ(r.violation_count, 4u);
  ASSERT_EQ(r.violations.size(), 1u);
  EXPECT_EQ(bad.record(r.violations[0].records[0]).step, 2);
}

// Online finding what offline finds but for the last step's pairs, three ranks apart from step 0, 2 or 5:
// relation_cases/consistency/three_ranks_online_as_offline. Its state stays bounded meanwhile: one running
// end per instance, and the kept steps' ends (kept_ends_bound).
TEST(Consistency, OnlineStateStaysBoundedWhenARankDiverges) {
  for (const char* name : {"in_sync", "diverge_from_0", "diverge_from_2", "diverge_from_5"}) {
    const TraceStore t = load_case_trace(std::string("consistency/three_ranks_online_as_offline/check/") + name + ".jsonl");
    ConsistencyOnlineCheck* check = nullptr;
    run_online(t, real_example(), &check);
    DdpSpec three;
    three.ranks = 3;
    EXPECT_LE(check->tracked_states(), kept_ends_bound(three)) << name;
  }
}

TEST(Consistency, OnlineInterestIsTheParamsVarTypes) {
  const std::unique_ptr<OnlineCheck> check = ConsistencyRelation().make_online_check(real_example());
  const OnlineInterest in = check->interest();
  EXPECT_FALSE(in.all_records);
  EXPECT_EQ(in.var_types, std::vector<std::string>{"torch.nn.Parameter"});
  EXPECT_TRUE(in.functions.empty());
}

// At scale (4 ranks x 30 params x 300 steps): example counts, the unconditional check and inference on one
// trace. How long this takes is the benchmarks' business (bench/), not a unit test's.
TEST(Consistency, CollectExamplesFromAnotherTraceAtScale) {
  DdpSpec big;
  big.ranks = 4;
  big.params = 30;
  big.steps = 300;
  const TraceStore t = ddp_trace("big", big);
  const ConsistencyRelation rel;
  const std::vector<Hypothesis> hs = rel.generate(t);
  ASSERT_EQ(hs.size(), 1u);
  // 120 instances: per step (initial skipped) C(120, 2) overlapping pairs, 30 * C(4, 2) equal ones.
  EXPECT_EQ(hs[0].positives.size(), 299u * 180);
  EXPECT_EQ(hs[0].positives.size() + hs[0].negatives.size(), 299u * 7140);
  Hypothesis h = hs[0];
  h.positives.clear();
  h.negatives.clear();
  rel.collect_examples(t, h);
  EXPECT_EQ(h.positives.size(), hs[0].positives.size());
  Invariant inv = real_example();
  inv.precondition.reset();
  const CheckResult r = rel.check(t, inv, {});
  // Unconditional: every unequal pair, initial states (the parameters at construction) left out as in
  // inference.
  EXPECT_EQ(r.violation_count, 299u * 7140 - 299u * 180);
  const std::vector<const Relation*> relations = {&rel};
  const InferResult inferred = infer_invariants({&t}, relations, InferOptions{});
  ASSERT_EQ(inferred.invariants.size(), 1u);
  const CheckResult learned = rel.check(t, inferred.invariants[0], {});
  EXPECT_TRUE(learned.triggered);
  EXPECT_TRUE(learned.passed());
}

namespace {

// The real invariant with one more clause: a constant stage listing `stages` (its own identity).
Invariant with_stage_clause(const std::string& stages) {
  std::string text = test_data::kDdpConsistencyInvariant;
  const std::string before = R"({"type": "consistent", "prop_name": "attributes.ndim")";
  text.insert(text.find(before), R"({"type": "constant", "prop_name": "meta_vars.stage", "additional_path": "None", )"
                                 R"("prop_dtype": "str", "values": [)" + stages + "]}, ");
  return invariant_from_json(text);
}

std::vector<PairKey> pair_keys(const std::vector<OnlineViolation>& violations, uint32_t member) {
  std::vector<PairKey> keys;
  for (const OnlineViolation& v : violations)
    if (v.member == member && v.records.size() == 2) keys.push_back(key_of(v.records[0], v.records[1]));
  std::sort(keys.begin(), keys.end());
  return keys;
}

}  // namespace

// Invariants that compare the same variables share one check (the instances and step ends are followed
// once per record, not once per invariant: a model's many parameters x many invariants), and each keeps
// the verdict it has alone: its own violations, its own triggered().
TEST(Consistency, InvariantsOfTheSameVariablesShareOneCheckAndKeepTheirOwnVerdicts) {
  Invariant grad = real_example();
  grad.params[0].attr_name = grad.params[1].attr_name = Name("grad");  // other variables: a check of its own
  Invariant api = real_example();
  api.params[0].type = ParamType::Api;  // not two variables: not checked online, shares with none
  const std::vector<Invariant> invariants = {real_example(), grad, with_stage_clause(R"("validation")"),
                                             with_stage_clause(R"("training")"), api};
  std::vector<const Invariant*> pointers;
  for (const Invariant& inv : invariants) pointers.push_back(&inv);
  std::vector<Relation::OnlineCheckOf> checks = ConsistencyRelation().make_online_checks(pointers);
  ASSERT_EQ(checks.size(), 3u);
  std::vector<std::vector<size_t>> members;
  for (const auto& c : checks) {
    EXPECT_EQ(c.check->members(), c.members.size());
    members.push_back(c.members);
  }
  std::sort(members.begin(), members.end());
  EXPECT_EQ(members, (std::vector<std::vector<size_t>>{{0, 2, 3}, {1}, {4}}));
  auto shared = std::find_if(checks.begin(), checks.end(), [](const auto& c) { return c.members.size() == 3; });

  DdpSpec spec;
  spec.prefix = "_ML_DAIKON_";
  spec.ranks = 3;
  spec.diverge_rank = 1;
  spec.diverge_from = 2;
  const TraceStore t = ddp_trace("shared", spec);
  std::vector<OnlineViolation> together;
  for (const Record& r : t.records()) shared->check->on_record(r, together);
  for (size_t m = 0; m < 3; ++m) {
    const Invariant& alone_inv = invariants[shared->members[m]];
    ConsistencyOnlineCheck* alone = nullptr;
    const std::vector<OnlineViolation> expected = run_online(t, alone_inv, &alone);
    EXPECT_EQ(pair_keys(together, static_cast<uint32_t>(m)), pair_keys(expected, 0)) << "member " << m;
    EXPECT_EQ(shared->check->member_triggered(m), alone->triggered()) << "member " << m;
  }
  // The stage no record is in: never triggered, never violated; the other two find the divergence.
  EXPECT_TRUE(pair_keys(together, 1).empty());
  EXPECT_FALSE(shared->check->member_triggered(1));
  EXPECT_FALSE(pair_keys(together, 0).empty());
  EXPECT_EQ(pair_keys(together, 0), pair_keys(together, 2));
}

// Through the online checker: violations of a shared check reach their own invariant's state and
// failed.log entry, with another relation's invariant between the members.
TEST(Consistency, TheOnlineCheckerReportsEachMembersViolationsAsItsOwn) {
  Invariant other = invariant_from_json(
      R"({"text_description": "other relation", "relation": "APIContainRelation", "params": [)"
      R"({"param_type": "APIParam", "api_full_name": "a"}, {"param_type": "APIParam", "api_full_name": "b"}],)"
      R"("precondition": {"parent_func_call_pre": {"inverted": false, "preconditions": [{"clauses": "Unconditional"}]}},)"
      R"("num_positive_examples": 5, "num_negative_examples": 0})");
  Invariant never = with_stage_clause(R"("validation")");
  never.text_description = SharedText("never");
  const fs::path dir = fs::temp_directory_path() / ("tc_consistency_members_" + std::to_string(getpid()));
  fs::remove_all(dir);
  OnlineCheckerOptions options;
  options.output_dir = dir.string();
  OnlineChecker checker({never, other, real_example()}, {}, options);

  DdpSpec spec;
  spec.prefix = "_ML_DAIKON_";
  spec.diverge_rank = 1;
  spec.diverge_from = 2;
  checker.add_lines("trace_VAR_1.log", ddp_text(spec));
  checker.end_batch();
  const std::vector<OnlineViolation> alone = run_online(ddp_trace("members", spec), real_example());
  const auto& states = checker.states();
  EXPECT_EQ(states[0].violations, 0u);
  EXPECT_FALSE(states[0].triggered());
  EXPECT_EQ(states[2].violations, alone.size());
  EXPECT_EQ(states[2].first_step, std::optional<int64_t>(2));
  std::ifstream failed(dir / "failed.log");
  size_t lines = 0;
  for (std::string line; std::getline(failed, line); ++lines) EXPECT_NE(line.find("\"real\""), std::string::npos) << line;
  EXPECT_EQ(lines, alone.size());
  fs::remove_all(dir);
}

namespace {

// The DDP invariant pairing replicas by name, as inference learns it: judged by digest.
Invariant by_name_example() {
  std::string text = test_data::kDdpConsistencyInvariant;
  const std::string before = R"({"type": "unequal", "prop_name": "process_id")";
  text.insert(text.find(before), R"({"type": "consistent", "prop_name": "var_name", "additional_path": "None", "prop_dtype": "str"}, )");
  return invariant_from_json(text);
}

std::string state_line(int64_t step, int64_t data) {
  return "{\"var_name\":\"model.0.weight\",\"var_type\":\"torch.nn.Parameter\",\"process_id\":100,\"thread_id\":7,"
         "\"meta_vars\":{\"step\":" + std::to_string(step) + ",\"stage\":\"training\",\"_DATA_PARALLEL_RANK\":0},\"type\":\"state_change\","
         "\"attributes\":{\"_TRAINCHECK_data_ID\":5,\"data\":" + std::to_string(data) +
         ",\"ndim\":2,\"nbytes\":16,\"requires_grad\":true},\"time\":" + std::to_string(1000 + step) + "}\n";
}

}  // namespace

TEST(ConsistencyOnline, OnlyInvariantsPairingOneVariableNameJudgeAPeersStepByDigest) {
  EXPECT_TRUE(ConsistencyOnlineCheck(by_name_example()).judges_peer_steps_by_digest());
  EXPECT_FALSE(ConsistencyOnlineCheck(real_example()).judges_peer_steps_by_digest());  // pairs across names
}

TEST(ConsistencyOnline, APeersMatchedStepTriggersTheInvariantWhenThisProcessesEndFinishesLater) {
  // Review: the notice may come before this process's end of the step has finished (an end finishes at
  // the variable's next record); the end, finishing later, still counts the twin pair.
  const Invariant inv = by_name_example();
  ConsistencyOnlineCheck check(inv);
  std::vector<OnlineViolation> violations;
  for (int64_t step = 0; step < 2; ++step)
    check.on_record(read_trace_text("own", state_line(step, 10 + step)).records.at(0), violations);
  check.on_peer_step_matched(1, 101);  // step 1 is still running here
  EXPECT_FALSE(check.triggered());
  check.on_record(read_trace_text("own", state_line(2, 12)).records.at(0), violations);  // step 1 ends
  EXPECT_TRUE(check.triggered());
  EXPECT_TRUE(violations.empty());
}
