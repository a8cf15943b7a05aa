// The online checker's violation log (check/online/violation_log.h): a violation with records is one
// failed.log line and counts its steps; a counted-only one writes nothing; the observer hears of each
// invariant's first violation once.
#include "check/online/violation_log.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <fstream>
#include <string>

#include "invariant/invariant.h"
#include "scratch_dir.h"
#include "trace/json_parse.h"

namespace fs = std::filesystem;
using namespace traincheck;

namespace {

Record step_record(int64_t step) {
  Record r;
  r.type = RecordType::FunctionPre;
  r.function = Name("f");
  r.has_step = true;
  r.step = step;
  r.stage = Name("training");
  return r;
}

// An invariant of the given description (an APIContain one: what it is does not matter to the log).
Invariant described(const std::string& description_json) {
  return invariant_from_json("{\"text_description\": \"" + description_json +
                             "\", \"relation\": \"APIContainRelation\", \"params\": [], \"precondition\": {}, "
                             "\"num_positive_examples\": 1, \"num_negative_examples\": 0}");
}

size_t lines_of(const std::string& path) {
  std::ifstream in(path);
  size_t n = 0;
  for (std::string line; std::getline(in, line);) n += !line.empty();
  return n;
}

}  // namespace

TEST(ViolationLog, WritesViolationsWithRecordsAndCountsTheRestWithoutALine) {
  const fs::path dir = scratch::empty_dir("violation_log");
  const std::string path = (dir / "failed.log").string();
  Invariant inv = described("f is fine");
  OnlineInvariantState state;
  state.invariant = &inv;
  size_t first_heard = 0;
  {
    ViolationLog log(path, /*max_steps_kept=*/500, /*max_samples_kept=*/8);
    log.set_first_violation_observer([&](const OnlineInvariantState& s) {
      ++first_heard;
      EXPECT_EQ(s.violations, 1u);
    });
    OnlineViolation written{{step_record(3), step_record(4)}};
    log.report(state, written);
    OnlineViolation counted;
    counted.unwritten = 5;
    counted.step = 9;
    log.report(state, counted);
    EXPECT_EQ(log.violations(), 6u);
    EXPECT_EQ(log.unwritten_violations(), 5u);
    EXPECT_EQ(log.invariants_violated(), 1u);
  }
  EXPECT_EQ(first_heard, 1u);
  EXPECT_EQ(state.violations, 6u);
  EXPECT_EQ(state.first_step, 3);
  EXPECT_EQ(state.last_step, 9);
  EXPECT_EQ(state.steps, (std::set<int64_t>{3, 4, 9}));
  EXPECT_EQ(state.samples.size(), 2u);
  EXPECT_EQ(lines_of(path), 1u);  // the counted-only violation has no line
  fs::remove_all(dir);
}

TEST(ViolationLog, ALineIsTheViolationObjectWrittenAsJson) {
  // The line is composed piece by piece (the invariant's text made once per invariant): it must be the
  // object {violated_id, invariant, display_name, check_passed, detection_time, trace} as JSON, byte for
  // byte, for every violation of an invariant and across invariants.
  const fs::path dir = scratch::empty_dir("violation_log_json");
  const std::string path = (dir / "failed.log").string();
  std::vector<Invariant> invariants;
  for (const char* text : {"f is \\\"fine\\\"", "g\\nis fine"})
    invariants.push_back(described(text));
  std::vector<OnlineInvariantState> states(invariants.size());
  for (size_t i = 0; i < states.size(); ++i) {
    states[i].invariant = &invariants[i];
    states[i].display_name = i == 0 ? "label \"one\"" : "two";
  }
  {
    ViolationLog log(path, 500, 8);
    for (int step = 0; step < 3; ++step)
      for (OnlineInvariantState& s : states) {
        OnlineViolation v{{step_record(step), step_record(step + 1)}};
        log.report(s, v);
      }
  }
  std::ifstream in(path);
  size_t n = 0;
  for (std::string line; std::getline(in, line); ++n) {
    Value parsed;
    std::string error;
    ASSERT_TRUE(parse_json(line, parsed, error)) << error;
    const OnlineInvariantState& s = states[n % 2];
    const int64_t step = static_cast<int64_t>(n / 2);
    std::string expected;
    append_value_json(expected,
                      make_object({{"violated_id", Value::integer(parsed.find("violated_id")->as_int())},
                                   {"invariant", s.invariant->to_value()},
                                   {"display_name", Value::string(s.display_name)},
                                   {"check_passed", Value::boolean(false)},
                                   {"detection_time", Value::integer(parsed.find("detection_time")->as_int())},
                                   {"trace", Value::array({step_record(step).to_value(), step_record(step + 1).to_value()})}}),
                      JsonStyle::Spaced);
    EXPECT_EQ(line, expected) << "line " << n;
    EXPECT_EQ(parsed.find("violated_id")->as_int(), static_cast<int64_t>(n));
  }
  EXPECT_EQ(n, 6u);
  fs::remove_all(dir);
}

TEST(ViolationLog, PastItsLineBudgetAnInvariantWritesTheFirstViolationOfEachLaterStepAndCountsTheRest) {
  // An invariant violated by most pairs of a model's parameters every step: its first
  // kLinesPerInvariant violations are lines, then one line per later step; every violation counted.
  const fs::path dir = scratch::empty_dir("violation_log_budget");
  const std::string path = (dir / "failed.log").string();
  Invariant inv = described("everywhere");
  OnlineInvariantState state;
  state.invariant = &inv;
  constexpr uint64_t kBudget = ViolationLog::kLinesPerInvariant;
  constexpr uint64_t kPerStep = 3000;
  constexpr int kSteps = 6;  // the budget is spent in step 3
  uint64_t unwritten = 0;
  {
    ViolationLog log(path, 500, 8);
    for (int step = 0; step < kSteps; ++step)
      for (uint64_t i = 0; i < kPerStep; ++i) {
        Record r = step_record(step);
        r.set(intern_key("meta_vars.step"), Value::integer(step));  // in its line, to count lines by step
        OnlineViolation v{{r}};
        log.report(state, v);
      }
    Record late_record = step_record(2);
    late_record.set(intern_key("meta_vars.step"), Value::integer(2));
    OnlineViolation late{{late_record}};  // a step that already has a line, past the budget
    log.report(state, late);
    OnlineViolation stepless{{Record{}}};  // no step: nothing to tell it apart, so counted only
    log.report(state, stepless);
    EXPECT_EQ(log.violations(), kSteps * kPerStep + 2);
    unwritten = log.unwritten_violations();
  }
  std::map<int64_t, uint64_t> lines_per_step;
  std::ifstream in(path);
  uint64_t lines = 0;
  for (std::string line; std::getline(in, line); ++lines) {
    Value parsed;
    std::string error;
    ASSERT_TRUE(parse_json(line, parsed, error)) << error;
    ++lines_per_step[parsed.find("trace")->as_array().at(0).find("meta_vars.step")->as_int()];
  }
  // Steps 0-2 whole (9000), step 3 up to the budget (1000) and nothing more; steps 4 and 5 one line each.
  EXPECT_EQ(lines, kBudget + 2);
  EXPECT_EQ(lines_per_step, (std::map<int64_t, uint64_t>{{0, kPerStep}, {1, kPerStep}, {2, kPerStep},
                                                          {3, kBudget - 3 * kPerStep}, {4, 1}, {5, 1}}));
  EXPECT_EQ(unwritten, kSteps * kPerStep + 2 - lines);
  EXPECT_EQ(state.violations, kSteps * kPerStep + 2);
  EXPECT_EQ(state.last_step, 5);
  fs::remove_all(dir);
}
