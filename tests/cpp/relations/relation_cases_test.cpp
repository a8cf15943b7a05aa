// Data-driven relation tests: one test per case folder under tests/cpp/data/relation_cases (its README
// says how to add one). Traces in infer/ are inferred from with the relations of relations.txt; every
// trace of the case is then checked, offline and online, against invariants.jsonl or, without one, the
// learned invariants. What inference learned and what the checks found are compared with the case's
// expected_invariants.jsonl and expected.txt; TC_UPDATE_GOLDEN=1 rewrites them (refused under CI:
// golden_update.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "case_trace.h"
#include "golden_update.h"
#include "infer/engine.h"
#include "invariant/invariant.h"
#include "relations/call_checks.h"
#include "relations/registry.h"

namespace fs = std::filesystem;
using namespace traincheck;

namespace {

std::vector<std::string> case_names() {
  std::vector<std::string> names;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(kRelationCases))
    if (e.is_regular_file() && e.path().filename() == "case.md")
      names.push_back(fs::relative(e.path().parent_path(), kRelationCases).generic_string());
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<fs::path> traces_in(const fs::path& dir) {
  std::vector<fs::path> out;
  if (!fs::is_directory(dir)) return out;
  for (const fs::directory_entry& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".jsonl") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> lines_of(const fs::path& p) {
  std::vector<std::string> out;
  std::istringstream in(slurp_file(p));
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(line);
  return out;
}

std::string_view short_type(RecordType t) {
  switch (t) {
    case RecordType::FunctionPre: return "pre";
    case RecordType::FunctionPost: return "post";
    case RecordType::FunctionException: return "exception";
    case RecordType::StateChange: return "state";
  }
  return "?";
}

// "step 6: c12 pre, c13 post": a violation's step (that of its first record) and its records in order,
// each followed by its own step where that differs ("c8 pre (step 2)").
std::string describe(const std::vector<const Record*>& records) {
  const int64_t step = records[0]->step;
  std::string out = "  step " + std::to_string(step) + ":";
  for (size_t i = 0; i < records.size(); ++i) {
    const Record& r = *records[i];
    // An API record by its call id; a state record by its variable and process.
    const std::string who = r.type == RecordType::StateChange ? std::string(r.var_name) + " of pid " + std::to_string(r.process_id)
                                                              : std::string(r.func_call_id());
    out += std::string(i ? ", " : " ") + who + " " + std::string(short_type(r.type));
    if (r.step != step) out += " (step " + std::to_string(r.step) + ")";
  }
  return out + "\n";
}

std::string verdict(const std::string& head, bool triggered, size_t count) {
  return head + (triggered ? "triggered" : "not triggered") + ", " + std::to_string(count) +
         (count == 1 ? " violation\n" : " violations\n");
}

std::string check_all(const TraceStore& trace, const std::vector<Invariant>& invariants) {
  std::string out;
  for (size_t i = 0; i < invariants.size(); ++i) {
    const Invariant& inv = invariants[i];
    const Relation* rel = find_relation(inv.relation);
    const std::string head = "check " + trace.name() + " #" + std::to_string(i);
    if (!rel) {
      out += head + ": relation not found\n";
      continue;
    }
    const CheckResult r = rel->check(trace, inv, CheckOptions{});
    out += verdict(head + " offline: ", r.triggered, r.violation_count);
    for (const Violation& v : r.violations) {
      std::vector<const Record*> records;
      for (uint32_t index : v.records) records.push_back(&trace.record(index));
      out += describe(records);
    }
    std::unique_ptr<OnlineCheck> online = rel->make_online_check(inv, &trace.signatures());
    if (!online) {
      out += head + " online: no online check\n";
      continue;
    }
    std::vector<OnlineViolation> violations;
    for (const Record& record : trace.records()) online->on_record(record, violations);
    online->on_trace_end(violations);  // a finished trace
    if (const auto* calls = dynamic_cast<const CallOnlineCheck*>(online.get())) {
      EXPECT_EQ(calls->open_calls(), 0u) << head << ": every call closes by the end of the trace";
    }
    out += verdict(head + " online: ", online->triggered(), violations.size());
    for (const OnlineViolation& v : violations) {
      std::vector<const Record*> records;
      for (const Record& record : v.records) records.push_back(&record);
      out += describe(records);
    }
  }
  return out;
}

void expect_golden(const std::string& actual, const fs::path& golden) {
  if (golden_update_requested()) std::ofstream(golden, std::ios::binary) << actual;
  EXPECT_EQ(actual, slurp_file(golden)) << "differs from " << golden;
}

class RelationCase : public ::testing::TestWithParam<std::string> {};

}  // namespace

TEST_P(RelationCase, MatchesItsExpectedOutputs) {
  const fs::path dir = kRelationCases / GetParam();
  std::vector<TraceStore> infer_traces, check_traces;
  for (const fs::path& p : traces_in(dir / "infer")) infer_traces.push_back(load_case_trace(p));
  for (const fs::path& p : traces_in(dir / "check")) check_traces.push_back(load_case_trace(p));
  ASSERT_FALSE(infer_traces.empty() && check_traces.empty()) << dir << " has no trace in infer/ or check/";

  std::string expected;
  std::vector<Invariant> invariants;
  if (!infer_traces.empty()) {
    std::vector<const Relation*> relations;
    for (const std::string& name : lines_of(dir / "relations.txt")) {
      relations.push_back(find_relation(name));
      ASSERT_NE(relations.back(), nullptr) << "relations.txt: unknown relation " << name;
    }
    ASSERT_FALSE(relations.empty()) << dir / "relations.txt" << " names no relation";
    std::vector<const TraceStore*> traces;
    for (const TraceStore& t : infer_traces) {
      traces.push_back(&t);
      size_t generated = 0;
      for (const Relation* rel : relations) generated += rel->generate(t).size();
      expected += "generate " + t.name() + ": " + std::to_string(generated) + " hypotheses\n";
    }
    InferResult result = infer_invariants(traces, relations, InferOptions{});
    expected += "infer: " + std::to_string(result.invariants.size()) + " invariants, " + std::to_string(result.failed.size()) +
                " failed hypotheses\n";
    for (const FailedHypothesis& f : result.failed)
      expected += "failed " + f.invariant.text_description.str() + ": " + f.reason + " (" + std::to_string(f.num_positive_examples) +
                  " positive, " + std::to_string(f.num_negative_examples) + " negative examples)\n";
    std::string learned;
    for (const Invariant& inv : result.invariants) learned += inv.to_json_line() + "\n";
    expect_golden(learned, dir / "expected_invariants.jsonl");
    invariants = std::move(result.invariants);
  }
  if (fs::exists(dir / "invariants.jsonl")) {
    invariants.clear();
    size_t line = 0;
    for (const std::string& text : lines_of(dir / "invariants.jsonl"))
      invariants.push_back(invariant_from_json(text, (dir / "invariants.jsonl").string(), ++line));
  }
  for (size_t i = 0; i < invariants.size(); ++i) {
    const Relation* rel = find_relation(invariants[i].relation);
    const std::string label = rel ? rel->display_name(invariants[i]) : std::string();
    expected += "#" + std::to_string(i) + " " + (label.empty() ? "(no display name) " + invariants[i].text_description.str() : label) + "\n";
  }
  for (const TraceStore& t : infer_traces) expected += check_all(t, invariants);
  for (const TraceStore& t : check_traces) expected += check_all(t, invariants);
  expect_golden(expected, dir / "expected.txt");
}

INSTANTIATE_TEST_SUITE_P(Cases, RelationCase, ::testing::ValuesIn(case_names()), [](const auto& info) {
  std::string name = info.param;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
});
