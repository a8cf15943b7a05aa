// ConsistencyRelation's grouped pair judging (relations/consistency_pairs.h) against the pairwise
// definition it replaces: the same triggered flag, violation count and kept violations, offline and
// online, on random traces whose groups are large enough to be counted, with unequal properties that
// collide, floating-point values, missing properties and every precondition shape.
#include "relations/consistency_pairs.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <tuple>

#include "relations/consistency.h"
#include "relations/ddp_invariant.h"
#include "trace/trace_reader.h"

using namespace traincheck;

namespace {

struct Spec {
  int processes = 2;
  int instances = 60;  // per process and var type
  int steps = 4;
  int values = 3;      // distinct data values per step (equal pairs are common)
  bool doubles = false;
  bool two_types = false;
  unsigned seed = 1;
};

// Parameters with attributes data (the compared one), data2 (a second one of the same instances), k (a
// group key), u (an unequal property that collides across processes), opt (sometimes missing).
std::string random_text(const Spec& spec) {
  std::mt19937 rng(spec.seed);
  std::string out;
  int64_t time = 1;
  for (int step = -1; step < spec.steps; ++step)
    for (int p = 0; p < spec.processes; ++p)
      for (int t = 0; t < (spec.two_types ? 2 : 1); ++t)
        for (int i = 0; i < spec.instances; ++i) {
          const int v = static_cast<int>(rng() % spec.values);
          std::string data = std::to_string(100 + v + 10 * step);
          if (spec.doubles && rng() % 4 == 0) data = std::to_string(100 + v + 10 * step) + (rng() % 2 ? ".000000000001" : ".5");
          const std::string opt = rng() % 5 == 0 ? "" : ",\"opt\":" + std::to_string(rng() % 2);
          out += "{\"var_name\":\"w" + std::to_string(i) + "\",\"var_type\":\"" + (t ? "B" : "torch.nn.Parameter") +
                 "\",\"process_id\":" + std::to_string(10 + p) + ",\"thread_id\":1,\"meta_vars\":{\"step\":" + std::to_string(step) +
                 ",\"_DATA_PARALLEL_RANK\":" + std::to_string(p) + "},\"type\":\"state_change\",\"attributes\":{\"data\":" + data +
                 ",\"data2\":" + std::to_string(rng() % 2) + ",\"k\":" + std::to_string(i % 2) + ",\"u\":" +
                 std::to_string(rng() % 3) + opt + "},\"time\":" + std::to_string(time++) + "}\n";
        }
  return out;
}

std::string clause(const char* type, const char* prop, const char* extra = "") {
  return std::string("{\"type\": \"") + type + "\", \"prop_name\": \"" + prop + "\", \"additional_path\": \"None\", \"prop_dtype\": \"int\"" +
         extra + "}";
}

// The invariant with `precondition` (a "var" group's JSON, or "" for none).
Invariant invariant(const std::string& precondition, const char* t2 = "torch.nn.Parameter", const char* a2 = "data") {
  std::string text = R"({"text_description": "t", "relation": "ConsistencyRelation", "params": [)"
                     R"({"param_type": "VarTypeParam", "var_type": "torch.nn.Parameter", "attr_name": "data"},)"
                     R"({"param_type": "VarTypeParam", "var_type": ")" +
                     std::string(t2) + R"(", "attr_name": ")" + a2 + "\"}]";
  if (!precondition.empty()) text += ", \"precondition\": {\"var\": " + precondition + "}";
  return invariant_from_json(text + "}");
}

std::string group(bool inverted, const std::vector<std::vector<std::string>>& disjuncts) {
  std::string out = std::string("{\"inverted\": ") + (inverted ? "true" : "false") + ", \"preconditions\": [";
  for (size_t d = 0; d < disjuncts.size(); ++d) {
    out += std::string(d ? ", " : "") + "{\"clauses\": [";
    for (size_t c = 0; c < disjuncts[d].size(); ++c) out += (c ? ", " : "") + disjuncts[d][c];
    out += "]}";
  }
  return out + "]}";
}

std::vector<Invariant> invariants_to_try() {
  const std::string up = clause("unequal", "process_id"), uu = clause("unequal", "attributes.u");
  const std::string ur = clause("unequal", "meta_vars._DATA_PARALLEL_RANK"), ck = clause("consistent", "attributes.k");
  const std::string cs = clause("consistent", "meta_vars.step"), ex = clause("exist", "attributes.opt");
  const std::string k1 = clause("constant", "attributes.k", ", \"values\": [1]");
  return {invariant(""),
          invariant(R"({"inverted": false, "preconditions": [{"clauses": "Unconditional"}]})"),
          invariant(group(false, {{up, uu, ur, ck, cs}})),
          invariant(group(false, {{up, ck}})),
          invariant(group(false, {{uu, ex}})),
          invariant(group(false, {{k1, up}})),
          invariant(group(false, {{up}, {ck, uu}})),
          invariant(group(true, {{up, ck}})),
          invariant(group(false, {})),
          invariant(group(false, {{up, ck}}), "torch.nn.Parameter", "data2"),
          invariant(group(false, {{ck}}), "B", "data"),
          invariant(group(false, {{uu}}), "B", "data"),
          // More unequal clauses than are counted (2^k projections): judged pair by pair.
          invariant(group(false, {{up, uu, ur, clause("unequal", "attributes.data2"), clause("unequal", "attributes.opt"),
                                   clause("unequal", "var_name"), clause("unequal", "attributes.k")}}))};
}

struct Reference {
  bool triggered = false;
  std::vector<std::tuple<int64_t, uint32_t, uint32_t>> violations;  // (step, first record, second record)
};

// The pairwise definition (what ConsistencyRelation::check computed before grouping): every pair of
// instances, every step both have, in the order of the instances in the trace.
Reference pairwise(const TraceStore& trace, const Invariant& inv) {
  Reference ref;
  const PreconditionGroup* g = inv.precondition_group(ConsistencyRelation::kGroup);
  struct Member {
    uint32_t var;
    const AttrHistory* h;
    std::vector<ConsistencyRelation::StepEnd> ends;
  };
  auto members = [&](const std::string& type, const std::string& attr) {
    std::vector<Member> out;
    for (uint32_t i = 0; i < trace.var_instances().size(); ++i)
      if (trace.var_instances()[i].var_type == type)
        if (const AttrHistory* h = trace.var_instances()[i].attr(attr); h && !h->states.empty())
          out.push_back({i, h, ConsistencyRelation::step_ends(trace, *h, ConsistencyRelation::skips_initial_state(type))});
    return out;
  };
  const Param& p = inv.params[0];
  const Param& q = inv.params[1];
  const bool same = p.var_type == q.var_type && p.attr_name == q.attr_name;
  const std::vector<Member> first = members(p.var_type, p.attr_name);
  const std::vector<Member> second = same ? first : members(q.var_type, q.attr_name);
  const auto& vars = trace.var_instances();
  for (size_t x = 0; x < first.size(); ++x)
    for (size_t y = same ? x + 1 : 0; y < second.size(); ++y) {
      const Member* a = &first[x];
      const Member* b = &second[y];
      if (a->var == b->var) continue;
      if (same && ConsistencyRelation::first_of_pair(vars[b->var].process_id, vars[b->var].var_name, vars[a->var].process_id,
                                                     vars[a->var].var_name))
        std::swap(a, b);
      for (const auto& ea : a->ends)
        for (const auto& eb : b->ends) {
          if (ea.step != eb.step || !ea.compared || !eb.compared) continue;
          if (g && !g->holds_on(trace.record(ea.record), trace.record(eb.record))) continue;
          ref.triggered = true;
          if (!ConsistencyRelation::close_values(a->h->states[ea.state].value, b->h->states[eb.state].value))
            ref.violations.emplace_back(ea.step, ea.record, eb.record);
        }
    }
  std::stable_sort(ref.violations.begin(), ref.violations.end(), [](const auto& l, const auto& r) { return std::get<0>(l) < std::get<0>(r); });
  return ref;
}

}  // namespace

TEST(ConsistencyPairs, OfflineCheckEqualsThePairwiseDefinition) {
  int cases = 0;
  for (unsigned seed = 1; seed <= 3; ++seed)
    for (bool doubles : {false, true})
      for (bool two_types : {false, true}) {
        Spec spec;
        spec.seed = seed;
        spec.doubles = doubles;
        spec.two_types = two_types;
        const TraceStore trace("t", read_trace_text("t", random_text(spec)));
        for (const Invariant& inv : invariants_to_try()) {
          const Reference ref = pairwise(trace, inv);
          for (size_t kept : {size_t{7}, size_t{1} << 30}) {
            CheckOptions options;
            options.max_violations = kept;
            const CheckResult got = ConsistencyRelation().check(trace, inv, options);
            const std::string what = inv.precondition ? to_json(inv.precondition->to_value()) : "none";
            ASSERT_EQ(got.triggered, ref.triggered) << what;
            ASSERT_EQ(got.violation_count, ref.violations.size()) << what;
            ASSERT_EQ(got.violations.size(), std::min(kept, ref.violations.size())) << what;
            for (size_t i = 0; i < got.violations.size(); ++i) {
              const auto& [step, r1, r2] = ref.violations[i];
              ASSERT_EQ(got.violations[i].records, (std::vector<uint32_t>{r1, r2})) << what << " violation " << i;
            }
            ++cases;
          }
        }
      }
  EXPECT_EQ(cases, 13 * 2 * 2 * 3 * 2);
}

// Online: per step the same count (written pairs plus counted ones) as offline, for every step but each
// instance's last (which ends only at the end of the trace); the written pairs are the pairwise ones.
TEST(ConsistencyPairs, OnlineCountsEqualThePairwiseDefinition) {
  Spec spec;
  spec.doubles = true;
  spec.two_types = true;
  const TraceStore trace("t", read_trace_text("t", random_text(spec)));
  for (const Invariant& inv : invariants_to_try()) {
    const Reference ref = pairwise(trace, inv);
    std::map<int64_t, uint64_t> expected, got;
    for (const auto& [step, r1, r2] : ref.violations)
      if (step < spec.steps - 1) ++expected[step];
    const std::unique_ptr<OnlineCheck> check = ConsistencyRelation().make_online_check(inv);
    std::vector<OnlineViolation> found;
    for (const Record& r : trace.records()) check->on_record(r, found);
    for (const OnlineViolation& v : found) got[v.records.empty() ? v.step : v.records[0].step] += v.records.empty() ? v.unwritten : 1;
    EXPECT_EQ(got, expected) << (inv.precondition ? to_json(inv.precondition->to_value()) : "none");
  }
}

// Regression: a precondition that pairs every same-shaped parameter across ranks (the original's DDP
// invariant pairs by size and rank, not by name) has violations quadratic in the parameters. Online,
// the first kWrittenPerStep of a step are written and the rest counted; before, each was a failed.log
// line (42 GB in 8 minutes at 40k parameters).
TEST(ConsistencyPairs, OnlineWritesABoundedNumberOfPairsPerStepAndCountsTheRest) {
  const Invariant inv = invariant_from_json(test_data::kDdpConsistencyInvariant);
  const int params = 60, steps = 3;
  std::string text;
  int64_t time = 1;
  for (int step = 0; step <= steps; ++step)
    for (int r = 0; r < 2; ++r)
      for (int p = 0; p < params; ++p)
        text += "{\"var_name\":\"w" + std::to_string(p) + "\",\"var_type\":\"torch.nn.Parameter\",\"process_id\":" + std::to_string(r) +
                ",\"thread_id\":1,\"meta_vars\":{\"step\":" + std::to_string(step) + ",\"_DATA_PARALLEL_RANK\":" + std::to_string(r) +
                "},\"type\":\"state_change\",\"attributes\":{\"_ML_DAIKON_data_ID\":" + std::to_string(100 * r + p) +
                ",\"data\":" + std::to_string(1000 * step + p) + ",\"ndim\":2,\"nbytes\":64},\"time\":" + std::to_string(time++) + "}\n";
  const TraceStore trace("t", read_trace_text("t", text));
  // Per step after the initial one: every cross-rank pair (60 x 60) is admitted, and all but the 60 of
  // one parameter with itself hold different values.
  const CheckResult offline = ConsistencyRelation().check(trace, inv, {});
  EXPECT_EQ(offline.violation_count, static_cast<size_t>(steps) * params * (params - 1));
  const std::unique_ptr<OnlineCheck> check = ConsistencyRelation().make_online_check(inv);
  std::vector<OnlineViolation> found;
  for (const Record& r : trace.records()) check->on_record(r, found);
  std::map<int64_t, uint64_t> written, counted;
  for (const OnlineViolation& v : found) {
    if (v.records.empty()) {
      counted[v.step] += v.unwritten;
    } else {
      ++written[v.records[0].step];
      ++counted[v.records[0].step];
    }
  }
  for (int step = 1; step < steps; ++step) {  // step `steps` is the last: it never ends online
    EXPECT_EQ(written[step], ConsistencyOnlineCheck::kWrittenPerStep) << step;
    EXPECT_EQ(counted[step], static_cast<uint64_t>(params * (params - 1))) << step;
  }
}

// Conditions that differ only in their constants' listed values have one shape, and no other conditions do.
TEST(ConsistencyPairs, ConditionsDifferingOnlyInConstantValuesHaveOneShape) {
  const std::string up = clause("unequal", "process_id"), ck = clause("consistent", "attributes.k");
  auto shape = [](const std::string& precondition) {
    const Invariant inv = invariant(precondition);
    return PairCondition(inv.precondition_group(ConsistencyRelation::kGroup), {}, false).shape();
  };
  const std::string k1 = shape(group(false, {{clause("constant", "attributes.k", ", \"values\": [1]"), up}}));
  EXPECT_FALSE(k1.empty());
  EXPECT_EQ(k1, shape(group(false, {{clause("constant", "attributes.k", ", \"values\": [0, 7]"), up}})));
  EXPECT_EQ(k1, shape(group(false, {{ck, up}})));  // a consistent clause groups as a constant one does
  EXPECT_NE(k1, shape(group(false, {{up, ck}})));  // the clauses' order is the projection's
  EXPECT_NE(k1, shape(group(false, {{clause("constant", "attributes.u", ", \"values\": [1]"), up}})));
  EXPECT_NE(k1, shape(group(false, {{clause("exist", "attributes.k"), up}})));
  EXPECT_NE(k1, shape(group(false, {{clause("constant", "attributes.k", ", \"values\": [1]"), clause("unequal", "attributes.u")}})));
  EXPECT_TRUE(shape(group(false, {{up}, {ck}})).empty());  // not groupable: never shared
  EXPECT_TRUE(shape(group(true, {{up}})).empty());
  EXPECT_TRUE(shape(group(false, {})).empty());  // holds on no pair
}

// One online check of several invariants over the same variables, whose preconditions differ only in
// their constants' values (they share one index of the step ends): each member's counts are its own
// pairwise ones, as if it were checked alone.
TEST(ConsistencyPairs, MembersSharingAnIndexKeepTheirPairwiseCounts) {
  Spec spec;
  spec.instances = 80;
  const TraceStore trace("t", read_trace_text("t", random_text(spec)));
  const std::string up = clause("unequal", "process_id"), uu = clause("unequal", "attributes.u");
  auto k_in = [&](const char* values, const std::string& unequal) {
    return invariant(group(false, {{clause("constant", "attributes.k", (std::string(", \"values\": ") + values).c_str()), unequal}}));
  };
  const std::vector<Invariant> invariants = {k_in("[1]", up), k_in("[0]", up), k_in("[0, 1]", up), k_in("[5]", up),
                                             invariant(group(false, {{clause("consistent", "attributes.k"), up}})),
                                             k_in("[1]", uu)};
  std::vector<const Invariant*> pointers;
  for (const Invariant& inv : invariants) pointers.push_back(&inv);
  const std::vector<Relation::OnlineCheckOf> checks = ConsistencyRelation().make_online_checks(pointers);
  ASSERT_EQ(checks.size(), 1u);
  ASSERT_EQ(checks[0].members, (std::vector<size_t>{0, 1, 2, 3, 4, 5}));
  std::vector<OnlineViolation> found;
  for (const Record& r : trace.records()) checks[0].check->on_record(r, found);
  for (uint32_t m = 0; m < invariants.size(); ++m) {
    std::map<int64_t, uint64_t> expected, got;
    for (const auto& [step, r1, r2] : pairwise(trace, invariants[m]).violations)
      if (step < spec.steps - 1) ++expected[step];
    for (const OnlineViolation& v : found)
      if (v.member == m) got[v.records.empty() ? v.step : v.records[0].step] += v.records.empty() ? v.unwritten : 1;
    EXPECT_EQ(got, expected) << "member " << m;
    const std::unique_ptr<OnlineCheck> alone = ConsistencyRelation().make_online_check(invariants[m]);
    std::vector<OnlineViolation> ignored;
    for (const Record& r : trace.records()) alone->on_record(r, ignored);
    EXPECT_EQ(checks[0].check->member_triggered(m), alone->triggered()) << "member " << m;
  }
  // The constant no end has is never triggered; the others find violations.
  EXPECT_FALSE(checks[0].check->member_triggered(3));
  EXPECT_TRUE(checks[0].check->member_triggered(0));
}

// In-process on one rank, the DDP invariant's pairs must differ in process: while a step has only this
// process's ends, no index of it is built (what made 100 invariants of distinct preconditions cost a
// training step at 50k parameters). A peer's end wakes the step's index, built from the ends so far,
// and the counts are the pairwise ones.
TEST(ConsistencyPairs, AStepIsIndexedOnlyOnceItHasEndsThatCouldPair) {
  const Invariant inv = invariant_from_json(test_data::kDdpConsistencyInvariant);
  const int params = 40;
  auto line = [](int rank, int step, int p, int data) {
    return "{\"var_name\":\"w" + std::to_string(p) + "\",\"var_type\":\"torch.nn.Parameter\",\"process_id\":" +
           std::to_string(rank) + ",\"thread_id\":1,\"meta_vars\":{\"step\":" + std::to_string(step) +
           ",\"_DATA_PARALLEL_RANK\":" + std::to_string(rank) + "},\"type\":\"state_change\",\"attributes\":{" +
           "\"_ML_DAIKON_data_ID\":" + std::to_string(100 * rank + p) + ",\"data\":" + std::to_string(data) +
           ",\"ndim\":2,\"nbytes\":" + std::to_string(8 * (1 + p % 4)) + "},\"time\":" + std::to_string(1 + step * 1000 + p) + "}\n";
  };
  std::string own;
  for (int step = 0; step < 4; ++step)
    for (int p = 0; p < params; ++p) own += line(0, step, p, 1000 * step + p);
  ConsistencyOnlineCheck check(inv);
  std::vector<OnlineViolation> found;
  for (const Record& r : read_trace_text("own", own).records) check.on_record(r, found);
  EXPECT_GT(check.tracked_states(), static_cast<size_t>(2 * params));  // steps 1 and 2 ended and kept
  EXPECT_EQ(check.built_indexes(), 0u);
  EXPECT_TRUE(found.empty());
  EXPECT_FALSE(check.triggered());
  // A peer's ends of parameter 3 (nbytes 32) at steps 1 (its initial state: never compared) and 2: the
  // second pairs with this process's 10 ends of nbytes 32 of step 2, which all hold other values but
  // parameter 3's own.
  for (const Record& r : read_trace_text("peer", line(1, 1, 3, 1003)).records) check.on_peer_step_end(r, found);
  EXPECT_EQ(check.built_indexes(), 0u);
  for (const Record& r : read_trace_text("peer", line(1, 2, 3, 2003)).records) check.on_peer_step_end(r, found);
  EXPECT_GE(check.built_indexes(), 1u);
  EXPECT_TRUE(check.triggered());
  uint64_t violations = 0;
  for (const OnlineViolation& v : found) violations += v.records.empty() ? v.unwritten : 1;
  EXPECT_EQ(violations, static_cast<uint64_t>(params / 4 - 1));

  // Two peers' ends of step 3 arrive before this process's own step 3 has ended (a peer's end is final
  // at once, ours at our next step's first record): two peers never pair, so they are kept without an
  // index, which this process's ends then build. Parameter 5 (nbytes 16) of each peer pairs with this
  // process's 10 ends of nbytes 16 at step 3.
  const size_t built = check.built_indexes();
  found.clear();
  for (int rank : {1, 2})
    for (int step : {2, 3})
      for (const Record& r : read_trace_text("peer", line(rank, step, 5, 1000 * step + 5)).records) check.on_peer_step_end(r, found);
  EXPECT_EQ(check.built_indexes(), built);
  EXPECT_TRUE(found.empty());
  std::string next;
  for (int p = 0; p < params; ++p) next += line(0, 4, p, 4000 + p);
  for (const Record& r : read_trace_text("own", next).records) check.on_record(r, found);
  EXPECT_GT(check.built_indexes(), built);
  violations = 0;
  for (const OnlineViolation& v : found) violations += v.records.empty() ? v.unwritten : 1;
  EXPECT_EQ(violations, static_cast<uint64_t>(2 * (params / 4 - 1)));
}
