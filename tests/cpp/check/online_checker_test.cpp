// The online checker library: dispatch, violations appended to failed.log as found, counts, and the same
// verdicts as the offline check on a finished trace.
#include "check/online/online_checker.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "check/checker.h"
#include "check/online/online_command.h"
#include "check/online/trace_tailer.h"
#include "relations/ddp_invariant.h"
#include "scratch_dir.h"
#include "testing/synthetic_trace.h"
#include "trace/json_parse.h"
#include "trace/trace_reader.h"
#include "trace/trace_store.h"

namespace fs = std::filesystem;
using namespace traincheck;

namespace {

const char* kParent = "torch.optim.adam.Adam.step";
const char* kChild = "torch.optim.adam.adam";

Invariant contains(const std::string& parent, const std::string& child) {
  return invariant_from_json(
      "{\"text_description\": \"" + parent + " contains " + child +
      "\", \"relation\": \"APIContainRelation\", \"params\": [{\"param_type\": \"APIParam\", \"api_full_name\": \"" + parent +
      "\"}, {\"param_type\": \"APIParam\", \"api_full_name\": \"" + child +
      "\"}], \"precondition\": {\"parent_func_call_pre\": {\"inverted\": false, \"preconditions\": [{\"clauses\": "
      "\"Unconditional\"}]}}, \"num_positive_examples\": 5, \"num_negative_examples\": 0}");
}

std::string call_line(const char* type, const std::string& fn, const std::string& id, int64_t time, int64_t step) {
  return "{\"type\": \"" + std::string(type) + "\", \"function\": \"" + fn + "\", \"func_call_id\": \"" + id +
         "\", \"process_id\": 7, \"thread_id\": 1, \"time\": " + std::to_string(time) + ", \"meta_vars\": {\"step\": " +
         std::to_string(step) + ", \"stage\": \"training\"}, \"args\": {}, \"kwargs\": {}}\n";
}
std::string pre(const std::string& fn, const std::string& id, int64_t t, int64_t step) { return call_line("function_call (pre)", fn, id, t, step); }
std::string post(const std::string& fn, const std::string& id, int64_t t, int64_t step) { return call_line("function_call (post)", fn, id, t, step); }

// One training step: the parent, with or without the child inside.
std::string step_lines(int64_t step, bool with_child) {
  const int64_t t = step * 100;
  const std::string sid = std::to_string(step);
  std::string out = pre(kParent, "p" + sid, t, step);
  if (with_child) out += pre(kChild, "c" + sid, t + 10, step) + post(kChild, "c" + sid, t + 20, step);
  return out + post(kParent, "p" + sid, t + 30, step);
}

fs::path fresh_dir(const std::string& name) {
  return scratch::fresh_path("online_checker_" + name);
}

OnlineCheckerOptions options_in(const fs::path& dir) {
  OnlineCheckerOptions o;
  o.output_dir = dir.string();
  return o;
}

std::vector<Value> failed_entries(const fs::path& dir) {
  std::ifstream in(dir / "failed.log");
  std::vector<Value> out;
  for (std::string line; std::getline(in, line);) {
    Value v;
    std::string error;
    EXPECT_TRUE(parse_json(line, v, error)) << error << ": " << line;
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace

TEST(OnlineChecker, AParentCallWithoutItsChildIsOneViolationCarryingTheParentsPreRecord) {
  const fs::path dir = fresh_dir("missing_child");
  OnlineChecker checker({contains(kParent, kChild)}, {}, options_in(dir));
  checker.add_lines("trace_API_7_1.log", step_lines(1, true) + step_lines(2, false) + step_lines(3, true));
  checker.end_batch();
  const OnlineCounts c = checker.counts();
  EXPECT_EQ(c.violations, 1u);
  EXPECT_EQ(c.invariants_violated, 1u);
  EXPECT_EQ(c.triggered, 1u);
  EXPECT_EQ(c.checked, 1u);
  ASSERT_EQ(checker.states()[0].samples.size(), 1u);
  const Record& evidence = checker.states()[0].samples[0];
  EXPECT_EQ(evidence.type, RecordType::FunctionPre);
  EXPECT_EQ(evidence.func_call_id(), "p2");
  EXPECT_EQ(evidence.step, 2);
  EXPECT_EQ(checker.states()[0].first_step, 2);
}

TEST(OnlineChecker, AGoodStreamYieldsNoViolationAndAnEmptyFailedLog) {
  const fs::path dir = fresh_dir("good");
  OnlineChecker checker({contains(kParent, kChild)}, {}, options_in(dir));
  for (int step = 0; step < 20; ++step) {
    checker.add_lines("trace_API_7_1.log", step_lines(step, true));
    checker.end_batch();
  }
  EXPECT_EQ(checker.counts().violations, 0u);
  EXPECT_EQ(checker.counts().triggered, 1u);
  EXPECT_EQ(checker.counts().current_step, 19);
  EXPECT_TRUE(fs::exists(dir / "failed.log"));
  EXPECT_EQ(fs::file_size(dir / "failed.log"), 0u);
  EXPECT_TRUE(fs::exists(dir / "invariants.json"));
}

// Lead [A, B] with A called once on a thread: no next call of A closes its window, so the end of the
// trace judges it, as the offline check does (some call of B returned after it): the worker process of a
// DataLoader that seeds itself once and never asks for its seed.
TEST(OnlineChecker, AThreadsOnlyCallOfTheLeaderIsJudgedAtTheEndOfTheTraceAsOffline) {
  const fs::path dir = fresh_dir("only_call");
  const char* kA = "torch.random.manual_seed";
  const char* kB = "torch.random.initial_seed";
  const Invariant lead = invariant_from_json(
      std::string("{\"text_description\": \"manual_seed is followed by initial_seed\", \"relation\": \"FunctionLeadRelation\", "
                  "\"params\": [{\"param_type\": \"APIParam\", \"api_full_name\": \"") + kA +
      "\"}, {\"param_type\": \"APIParam\", \"api_full_name\": \"" + kB +
      "\"}], \"precondition\": {\"func_lead\": {\"inverted\": false, \"preconditions\": [{\"clauses\": \"Unconditional\"}]}}, "
      "\"num_positive_examples\": 5, \"num_negative_examples\": 0}");
  // Thread 1 of pid 7: A, then B (passes). Thread 1 of pid 8 (a fork child: the same thread id): A only.
  auto of_pid_8 = [](std::string lines) {
    const std::string from = "\"process_id\": 7", to = "\"process_id\": 8";
    for (size_t at = lines.find(from); at != std::string::npos; at = lines.find(from, at)) lines.replace(at, from.size(), to);
    return lines;
  };
  const std::string good = pre(kA, "a1", 10, 1) + post(kA, "a1", 11, 1) + pre(kB, "b1", 12, 1) + post(kB, "b1", 13, 1);
  const std::string bad = of_pid_8(pre(kA, "a2", 20, 1) + post(kA, "a2", 21, 1));

  OnlineChecker checker({lead}, {}, options_in(dir));
  checker.add_lines("trace_API_7_1.log", good);
  checker.add_lines("trace_API_8_1.log", bad);
  checker.end_batch();
  EXPECT_EQ(checker.counts().violations, 0u) << "no window has closed yet";
  EXPECT_EQ(checker.counts().triggered, 0u);

  checker.end_trace();
  EXPECT_EQ(checker.counts().violations, 1u);
  EXPECT_EQ(checker.counts().triggered, 1u);
  const std::vector<Value> entries = failed_entries(dir);
  ASSERT_EQ(entries.size(), 1u);
  const Array& trace = entries[0].find("trace")->as_array();
  ASSERT_EQ(trace.size(), 1u);
  EXPECT_EQ(*trace[0].find("func_call_id"), Value::string("a2"));
  EXPECT_EQ(*trace[0].find("process_id"), Value::integer(8));

  checker.end_trace();  // once
  checker.add_lines("trace_API_8_1.log", of_pid_8(pre(kA, "a3", 30, 2) + post(kA, "a3", 31, 2)));  // after the end: ignored
  checker.end_batch();
  EXPECT_EQ(checker.counts().violations, 1u);
  EXPECT_EQ(failed_entries(dir).size(), 1u);

  // The offline check of the same trace: the same one violation, the same record.
  const fs::path trace_dir = dir / "trace";
  fs::create_directories(trace_dir);
  std::ofstream(trace_dir / "trace_API_7_1.log") << good;
  std::ofstream(trace_dir / "trace_API_8_1.log") << bad;
  const TraceStore store = TraceStore::load_folder(trace_dir.string());
  const TraceCheckReport offline = check_trace(store, {lead}, {});
  ASSERT_EQ(offline.outcomes.size(), 1u);
  const CheckResult& result = offline.outcomes[0].result;
  EXPECT_TRUE(result.triggered);
  ASSERT_EQ(result.violations.size(), 1u);
  ASSERT_EQ(result.violations[0].records.size(), 1u);
  EXPECT_EQ(store.record(result.violations[0].records[0]).func_call_id(), "a2");
}

TEST(OnlineChecker, RecordsOfApisNoInvariantNamesAreNotDispatched) {
  const fs::path dir = fresh_dir("unrelated");
  OnlineChecker checker({contains(kParent, kChild)}, {}, options_in(dir));
  std::string lines;
  for (int i = 0; i < 50; ++i) lines += pre("torch.nn.functional.relu", "r" + std::to_string(i), i, 0) + post("torch.nn.functional.relu", "r" + std::to_string(i), i, 0);
  checker.add_lines("trace_API_7_1.log", lines + step_lines(1, false));
  checker.end_batch();
  const OnlineCounts c = checker.counts();
  EXPECT_EQ(c.lines, 102u);
  EXPECT_EQ(c.records, 2u);     // the other lines were not even parsed
  EXPECT_EQ(c.dispatched, 2u);  // the parent's pre and post only
  EXPECT_EQ(c.violations, 1u);
}

TEST(OnlineChecker, FailedLogLinesParseAndHaveTheOriginalsFieldsAsViolationsOccur) {
  const fs::path dir = fresh_dir("failed_log");
  OnlineChecker checker({contains(kParent, kChild)}, {}, options_in(dir));
  checker.add_lines("trace_API_7_1.log", step_lines(4, false));
  checker.end_batch();
  // Appended at once, before any report or finish.
  std::vector<Value> entries = failed_entries(dir);
  ASSERT_EQ(entries.size(), 1u);
  checker.add_lines("trace_API_7_1.log", step_lines(5, false));
  checker.end_batch();
  entries = failed_entries(dir);
  ASSERT_EQ(entries.size(), 2u);
  for (size_t i = 0; i < entries.size(); ++i) {
    const Value& e = entries[i];
    ASSERT_TRUE(e.is_object());
    EXPECT_EQ(*e.find("violated_id"), Value::integer(static_cast<int64_t>(i)));
    EXPECT_EQ(*e.find("check_passed"), Value::boolean(false));
    EXPECT_TRUE(e.find("detection_time")->is_number());
    EXPECT_EQ(e.find("invariant")->find("relation")->as_string(), "APIContainRelation");
    const Value& trace = *e.find("trace");
    ASSERT_TRUE(trace.is_array());
    ASSERT_EQ(trace.as_array().size(), 1u);
    EXPECT_EQ(trace.as_array()[0].find("type")->as_string(), "function_call (pre)");
    EXPECT_EQ(*trace.as_array()[0].find("meta_vars.step"), Value::integer(static_cast<int64_t>(4 + i)));
  }
}

TEST(OnlineChecker, BadLinesAreCountedAndNamedBySourceAndLineNotThrown) {
  const fs::path dir = fresh_dir("bad_lines");
  OnlineChecker checker({contains(kParent, kChild)}, {}, options_in(dir));
  checker.add_lines("trace_API_7_1.log", step_lines(1, true) + "{\"type\": \n" + "{\"type\": \"function_call (pre)\"}\n");
  checker.end_batch();
  EXPECT_EQ(checker.counts().bad_lines, 2u);
  ASSERT_EQ(checker.recent_errors().size(), 2u);
  EXPECT_EQ(checker.recent_errors()[0].rfind("trace_API_7_1.log:5: invalid JSON", 0), 0u) << checker.recent_errors()[0];
  EXPECT_NE(checker.recent_errors()[1].find("trace_API_7_1.log:6: field 'process_id'"), std::string::npos) << checker.recent_errors()[1];
}

TEST(OnlineChecker, InvariantsWithoutAnOnlineCheckAreCountedAsNotChecked) {
  const fs::path dir = fresh_dir("not_checked");
  Invariant other = contains(kParent, kChild);
  other.relation = "VarPeriodicChangeRelation";
  OnlineChecker checker({contains(kParent, kChild), other}, {}, options_in(dir));
  const OnlineCounts c = checker.counts();
  EXPECT_EQ(c.checked, 1u);
  EXPECT_EQ(c.not_checked, 1u);
  const std::string html = checker.render_report();
  EXPECT_NE(html.find("Checking Progress"), std::string::npos);
  EXPECT_NE(html.find("Not checked"), std::string::npos);
}

TEST(OnlineChecker, ABatchOfSeveralFilesIsCheckedInTimeOrder) {
  // The child's lines come in another source than the parent's (as a second thread's file would, for a
  // var child); within the batch they are merged by time, so the parent sees its child.
  const fs::path dir = fresh_dir("merge");
  OnlineChecker checker({contains(kParent, kChild)}, {}, options_in(dir));
  const std::string p = pre(kParent, "p1", 100, 1) + post(kParent, "p1", 130, 1);
  const std::string c = pre(kChild, "c1", 110, 1) + post(kChild, "c1", 120, 1);
  checker.add_lines("a.log", p);
  checker.add_lines("b.log", c);
  checker.end_batch();
  EXPECT_EQ(checker.counts().violations, 0u);
}

TEST(OnlineChecker, SameViolationsAsTheOfflineCheckOnASyntheticRunWithAMissingForeachAdd) {
  const fs::path dir = fresh_dir("offline_agreement");
  const fs::path trace_dir = dir / "trace";
  SyntheticTraceSpec spec;
  spec.iterations = 12;
  spec.skip_foreach_add_at = 7;
  write_synthetic_trace(trace_dir.string(), spec);
  std::vector<Invariant> invariants = {contains(kParent, "torch._VariableFunctionsClass._foreach_add_"), contains(kParent, kChild)};

  const TraceStore store = TraceStore::load_folder(trace_dir.string());
  const TraceCheckReport offline = check_trace(store, invariants, {});

  OnlineChecker checker(invariants, {}, options_in(dir / "online"));
  for (const std::string& file : list_trace_files(trace_dir.string())) {
    std::string text, error;
    ASSERT_TRUE(read_file(file, text, error)) << error;
    checker.add_lines(fs::path(file).filename().string(), text);
  }
  checker.end_batch();
  ASSERT_EQ(offline.outcomes.size(), checker.states().size());
  for (size_t i = 0; i < invariants.size(); ++i) {
    EXPECT_EQ(checker.states()[i].violations, offline.outcomes[i].result.violation_count) << invariants[i].text_description;
    EXPECT_EQ(checker.states()[i].check->member_triggered(checker.states()[i].member), offline.outcomes[i].result.triggered);
    const std::vector<int64_t> steps = violation_steps(store, offline.outcomes[i]);
    EXPECT_EQ(std::vector<int64_t>(checker.states()[i].steps.begin(), checker.states()[i].steps.end()), steps);
  }
  EXPECT_EQ(checker.states()[0].violations, 1u);
  EXPECT_EQ(checker.states()[0].first_step, 7);
}

TEST(OnlineChecker, RecordsLaterThanTheHorizonWaitForALaterBatch) {
  // b.log's child arrives in two parts; with the horizon at its last delivered time the parent's post
  // (a.log, later) waits, so the parent still sees its whole child.
  const fs::path dir = fresh_dir("horizon");
  OnlineChecker checker({contains(kParent, kChild)}, {}, options_in(dir));
  checker.add_lines("a.log", pre(kParent, "p1", 100, 1) + post(kParent, "p1", 130, 1));
  checker.add_lines("b.log", pre(kChild, "c1", 110, 1));
  EXPECT_EQ(checker.last_time("a.log"), 130);
  EXPECT_EQ(checker.last_time("b.log"), 110);
  EXPECT_EQ(checker.last_time("c.log"), std::nullopt);
  checker.end_batch(110);
  EXPECT_EQ(checker.counts().dispatched, 2u);  // the parent's pre and the child's pre
  checker.add_lines("b.log", post(kChild, "c1", 120, 1));
  checker.end_batch();
  EXPECT_EQ(checker.counts().dispatched, 4u);
  EXPECT_EQ(checker.counts().violations, 0u);
}

TEST(OnlineChecker, ABacklogReadInSmallChunksGivesTheVerdictsOfOneWholeRead) {
  const fs::path dir = fresh_dir("chunked_backlog");
  const fs::path trace_dir = dir / "trace";
  SyntheticTraceSpec spec;
  spec.iterations = 40;
  spec.skip_foreach_add_at = 7;
  spec.detach_first_param_from = 30;
  write_synthetic_trace(trace_dir.string(), spec);
  const std::vector<Invariant> invariants = {contains(kParent, "torch._VariableFunctionsClass._foreach_add_"), contains(kParent, kChild)};
  auto run = [&](const std::string& name, size_t chunk, size_t& polls) {
    OnlineChecker checker(invariants, {}, options_in(dir / name));
    TraceTailer tailer({trace_dir.string()}, {}, chunk);
    std::optional<int64_t> horizon;
    polls = 0;
    do {
      poll_into_checker(tailer, checker, horizon, [](const std::string& w) { ADD_FAILURE() << w; });
      ++polls;
    } while (tailer.behind() && polls < 1000000);
    checker.end_batch();
    std::vector<std::pair<uint64_t, std::set<int64_t>>> verdicts;
    for (const OnlineInvariantState& s : checker.states()) verdicts.push_back({s.violations, s.steps});
    return std::make_pair(verdicts, checker.counts());
  };
  size_t whole_polls = 0, chunked_polls = 0;
  const auto [whole, whole_counts] = run("whole", TraceTailer::kDefaultChunkBytes, whole_polls);
  const auto [chunked, chunked_counts] = run("chunked", 1000, chunked_polls);
  EXPECT_EQ(whole_polls, 1u);
  EXPECT_GT(chunked_polls, 50u);
  EXPECT_EQ(chunked, whole);
  EXPECT_EQ(chunked_counts.records, whole_counts.records);
  EXPECT_EQ(chunked_counts.dispatched, whole_counts.dispatched);
  EXPECT_EQ(whole[0].first, 1u);
  EXPECT_EQ(whole[0].second, std::set<int64_t>{7});
}

namespace {

// Parameters' states of one process: `params` parameters of one shape, each holding its own data, over
// `steps` steps (the data changes every step, so every state after the first is compared).
std::string one_process_states(int params, int steps) {
  std::string out;
  for (int step = 0; step < steps; ++step)
    for (int p = 0; p < params; ++p)
      out += "{\"var_name\": \"model." + std::to_string(p) + ".weight\", \"var_type\": \"torch.nn.Parameter\", "
             "\"process_id\": 100, \"thread_id\": 7, \"meta_vars\": {\"step\": " + std::to_string(step) +
             ", \"_DATA_PARALLEL_RANK\": 0}, \"type\": \"state_change\", \"attributes\": {\"_ML_DAIKON_data_ID\": " +
             std::to_string(p) + ", \"data\": " + std::to_string(1000 * p + step) +
             ", \"ndim\": 2, \"nbytes\": 64}, \"time\": " + std::to_string(1000 * step + p) + "}\n";
  return out;
}

// The DDP invariant without its process and rank clauses: it pairs different parameters of one process.
Invariant within_one_process() {
  std::string text = test_data::kDdpConsistencyInvariant;
  for (const std::string clause :
       {R"({"type": "unequal", "prop_name": "process_id", "additional_path": "None", "prop_dtype": "int"},)",
        R"({"type": "unequal", "prop_name": "meta_vars._DATA_PARALLEL_RANK", "additional_path": "None", "prop_dtype": "float"},)"})
    text.erase(text.find(clause), clause.size());
  return invariant_from_json(text);
}

}  // namespace

// Issue 24: a single process's in-process checker (no cross-rank exchange) never pairs two processes'
// records, so the checks that pair nothing else are fed nothing and their records skipped unparsed; a
// check that can pair one process's records is still fed and still finds its violations.
TEST(OnlineChecker, AssumingOneProcessIdlesOnlyTheChecksThatPairRecordsOfTwoProcesses) {
  const std::string text = one_process_states(3, 4);
  {
    const fs::path dir = fresh_dir("one_process_ddp");
    OnlineChecker checker({invariant_from_json(test_data::kDdpConsistencyInvariant)}, ApiSignatures{}, options_in(dir));
    EXPECT_EQ(checker.assume_one_process(), 1u);
    checker.add_lines("trace_VAR_100_7.log", text);
    checker.end_trace();
    EXPECT_EQ(checker.counts().records, 0u);  // not one line parsed
    EXPECT_EQ(checker.counts().violations, 0u);
    EXPECT_EQ(checker.counts().checked, 1u);
    EXPECT_FALSE(checker.states()[0].check->triggered());
    fs::remove_all(dir);
  }
  {
    const fs::path dir = fresh_dir("one_process_both");
    OnlineChecker checker({invariant_from_json(test_data::kDdpConsistencyInvariant), within_one_process()}, ApiSignatures{},
                          options_in(dir));
    // One check follows both (they compare the same variables): the work is shared, so none idles.
    EXPECT_EQ(checker.assume_one_process(), 0u);
    checker.add_lines("trace_VAR_100_7.log", text);
    checker.end_trace();
    EXPECT_EQ(checker.counts().records, 12u);
    // Steps 1-3 of each parameter built from its step-0 line's template, and said so in the summary.
    const Value summary = checker.summary();
    EXPECT_EQ(summary.find("line_templates")->find("records_built")->as_int(), 9);
    EXPECT_EQ(summary.find("line_templates")->find("templates")->as_int(), 3);
    EXPECT_GT(checker.counts().violations, 0u);  // different data in parameters the second pairs
    EXPECT_FALSE(checker.states()[0].check->member_triggered(checker.states()[0].member));
    EXPECT_TRUE(checker.states()[1].check->member_triggered(checker.states()[1].member));
    fs::remove_all(dir);
  }
}

namespace {

Invariant grad_reset_claim() {
  return invariant_from_json(
      R"({"text_description": "Parameter.grad is reset", "relation": "GradientResetRelation", "params": [{"param_type": "VarTypeParam", "var_type": "torch.nn.Parameter", "attr_name": "_TRAINCHECK_grad_reset"}], "precondition": {"var": {"inverted": false, "preconditions": [{"clauses": "Unconditional"}]}}, "num_positive_examples": 5, "num_negative_examples": 0})");
}

std::string param_state(const std::string& name, int64_t time, int64_t step) {
  return R"({"var_name": ")" + name + R"(", "var_type": "torch.nn.Parameter", "mode": null, "dump_loc": null, "process_id": 7, "thread_id": 1, "time": )" +
         std::to_string(time) + R"(, "meta_vars": {"step": )" + std::to_string(step) +
         R"(, "stage": "training"}, "type": "state_change", "attributes": {"data": 1, "grad": null}})" + "\n";
}

const Value* unevaluated_of(const OnlineChecker& checker) {
  static Value summary;
  summary = checker.summary();
  return summary.find("unevaluated");
}

}  // namespace

// An invariant over parameter states on a run that recorded none (no model tracked) could not be evaluated:
// the summary says so and why; one whose states were recorded, or one over calls, is evaluated.
TEST(OnlineChecker, AnInvariantOverStatesNoRecordHadIsUnevaluatedWithItsReason) {
  const fs::path dir = fresh_dir("unevaluated");
  // Its var param describes relu's result, not state records: a call never made leaves it untriggered.
  const Invariant relu_float = invariant_from_json(
      R"({"text_description": "relu returns float32", "relation": "ConsistentOutputRelation", "params": [{"param_type": "APIParam", "api_full_name": "torch.nn.functional.relu"}, {"param_type": "VarTypeParam", "var_type": "torch.Tensor", "attr_name": "dtype", "const_value": "torch.float32"}], "precondition": {"pre_event": {"inverted": false, "preconditions": [{"clauses": "Unconditional"}]}}, "num_positive_examples": 10, "num_negative_examples": 0})");
  OnlineChecker checker({grad_reset_claim(), contains(kParent, kChild), relu_float}, {}, options_in(dir));
  checker.add_lines("trace_API_7_1.log", step_lines(1, true) + step_lines(2, true));
  checker.end_batch();
  const Value* unevaluated = unevaluated_of(checker);
  ASSERT_TRUE(unevaluated != nullptr && unevaluated->is_object());
  ASSERT_EQ(unevaluated->as_object().size(), 1u);
  EXPECT_EQ(key_name(unevaluated->as_object()[0].key), grad_reset_claim().identity());
  EXPECT_EQ(unevaluated->as_object()[0].value.as_string(), "no torch.nn.Parameter state recorded");

  // States, all at step 0: no training step was found.
  const fs::path dir0 = fresh_dir("unevaluated_step0");
  OnlineChecker at_zero({grad_reset_claim()}, {}, options_in(dir0));
  at_zero.add_lines("trace_VAR_7_1.log", param_state("model.w", 10, 0) + param_state("model.w", 20, 0));
  at_zero.end_batch();
  ASSERT_EQ(unevaluated_of(at_zero)->as_object().size(), 1u);
  EXPECT_EQ(unevaluated_of(at_zero)->as_object()[0].value.as_string(), "no training step found");

  // States at training steps: evaluable, though no claim was made (not triggered).
  const fs::path dir1 = fresh_dir("unevaluated_steps");
  OnlineChecker stepped({grad_reset_claim()}, {}, options_in(dir1));
  stepped.add_lines("trace_VAR_7_1.log", param_state("model.w", 10, 1) + param_state("model.w", 20, 2));
  stepped.end_batch();
  EXPECT_TRUE(unevaluated_of(stepped)->as_object().empty());
}
