#include "check/online/process_summaries.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "trace/json_parse.h"

namespace traincheck {
namespace {

ProcessViolationRow row(std::string identity, std::string label, std::optional<int64_t> first, std::optional<int64_t> last,
                        uint64_t count) {
  return {std::move(identity), ViolationSummaryRow{std::move(label), "APIContainRelation", "", first, last, count, {}, "", "",
                                                   std::nullopt, std::nullopt}};
}

// A summary_<pid>.json as the in-process checker writes it, reduced to the field merged here.
Value summary_of(const std::vector<ProcessViolationRow>& rows) {
  return make_object({{"violations", Value::integer(1)}, {"violation_summary", process_violation_rows_value(rows)}});
}

TEST(ProcessSummaries, OneInvariantViolatedInTwoProcessesIsOneRowSpanningBoth) {
  const std::vector<Value> summaries = {summary_of({row("inv-a", "A() always calls B()", 4, 6, 3)}),
                                        summary_of({row("inv-a", "A() always calls B()", 2, 5, 2)})};
  const std::vector<ViolationSummaryRow> rows = merge_process_summaries(summaries);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].label, "A() always calls B()");
  EXPECT_EQ(rows[0].relation, "APIContainRelation");
  EXPECT_EQ(rows[0].first_step, 2);
  EXPECT_EQ(rows[0].last_step, 6);
  EXPECT_EQ(rows[0].count, 5u);
}

TEST(ProcessSummaries, ARowKeepsItsTrustThroughTheSummaryFile) {
  ProcessViolationRow trusted = row("inv-a", "A() always calls B()", 4, 6, 3);
  trusted.row.held_on_programs = 9;
  trusted.row.examples = 40;
  const std::vector<ViolationSummaryRow> rows =
      merge_process_summaries({summary_of({row("inv-b", "C() always calls D()", 1, 1, 1), trusted})});
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].label, "A() always calls B()");  // more trusted: first, though it started later
  EXPECT_EQ(rows[0].held_on_programs, 9);
  EXPECT_EQ(rows[0].examples, 40);
  EXPECT_FALSE(rows[1].held_on_programs.has_value());
}

TEST(ProcessSummaries, DistinctInvariantsStayApartEarliestFirstStepFirstAndUnknownStepsLast) {
  const std::vector<Value> summaries = {
      summary_of({row("inv-late", "late", 9, 9, 1), row("inv-nostep", "no step", std::nullopt, std::nullopt, 4)}),
      summary_of({row("inv-early", "early", 1, 3, 2)})};
  const std::vector<ViolationSummaryRow> rows = merge_process_summaries(summaries);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].label, "early");
  EXPECT_EQ(rows[1].label, "late");
  EXPECT_EQ(rows[2].label, "no step");
  EXPECT_FALSE(rows[2].first_step.has_value());
}

TEST(ProcessSummaries, SummariesWithoutRowsAndMalformedRowsAreSkipped) {
  Value old_collector = make_object({{"violations", Value::integer(3)}});
  Value malformed = make_object({{"violation_summary", Value::array({Value::integer(1), make_object({{"label", Value::string("x")}})})}});
  const std::vector<Value> summaries = {old_collector, malformed, Value::string("not an object"),
                                        summary_of({row("inv-a", "a", 2, 2, 1)})};
  const std::vector<ViolationSummaryRow> rows = merge_process_summaries(summaries);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].label, "a");
}

TEST(ProcessSummaries, TableFromSummaryTextsSkipsTextThatIsNotJsonAndIsEmptyWithoutViolations) {
  std::string text;
  append_value_json(text, summary_of({row("inv-a", "Optimizer.step() always calls functional.adam()", 4, 4, 1)}), JsonStyle::Indented, 2);
  const std::string table = format_run_violation_table({text, "{truncated"}, 20);
  EXPECT_NE(table.find("first step"), std::string::npos);
  EXPECT_NE(table.find("Optimizer.step() always calls functional.adam()"), std::string::npos);
  EXPECT_NE(table.find("         4          4           1  "), std::string::npos) << table;
  std::string clean;
  append_value_json(clean, summary_of({}), JsonStyle::Indented, 2);
  EXPECT_EQ(format_run_violation_table({clean}, 20), "");
  EXPECT_EQ(format_run_violation_table({}, 20), "");
}

namespace fs = std::filesystem;

// A run's online_check folder, removed after the test.
struct RunFolder {
  fs::path dir = fs::temp_directory_path() / ("tc_run_report_" + std::to_string(getpid()));
  RunFolder() {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~RunFolder() { fs::remove_all(dir); }
  void write(const std::string& name, const std::string& text) const { std::ofstream(dir / name) << text; }
};

std::string process_summary(int violations, const std::vector<std::string>& violated, const std::vector<std::string>& triggered,
                            int checked, const std::vector<ProcessViolationRow>& rows) {
  Value v = make_object({{"violations", Value::integer(violations)},
                         {"checked", Value::integer(checked)},
                         {"not_checked", Value::integer(1)},
                         {"violated_invariants", make_string_array(violated)},
                         {"triggered_invariants", make_string_array(triggered)},
                         {"violation_summary", process_violation_rows_value(rows)}});
  std::string text;
  append_value_json(text, v, JsonStyle::Indented, 2);
  return text;
}

// Two ranks violate the same invariant and one more each: the totals add violations, count each
// invariant once, and the table merges the shared row; a torn summary is skipped.
TEST(ProcessSummaries, RunReportAddsViolationsAndCountsEachInvariantOnceOverProcesses) {
  RunFolder run;
  run.write("summary_10.json", process_summary(3, {"a", "b"}, {"a", "b", "c"}, 5, {row("a", "A", 2, 4, 2), row("b", "B", 3, 3, 1)}));
  run.write("summary_11.json", process_summary(4, {"a", "d"}, {"a", "d"}, 6, {row("a", "A", 1, 5, 3), row("d", "D", 7, 7, 1)}));
  run.write("summary_12.json", "{\"violations\": 9");  // killed while writing
  run.write("failed.log", "{}\n{}\n");
  const RunOnlineCheckReport report = run_online_check_report(run.dir.string(), 20);
  ASSERT_TRUE(report.checked);
  EXPECT_EQ(report.line, "online check: 7 violations of 3 invariants (4 triggered, 6 checked, 1 not checked); see " +
                             (run.dir / "failed.log").string());
  EXPECT_NE(report.table.find("         1          5           5  A"), std::string::npos) << report.table;
  EXPECT_NE(report.table.find("  D"), std::string::npos) << report.table;
}

// A run with no violation says so in one line, with how many invariants were checked, and no table.
TEST(ProcessSummaries, RunReportWithoutViolationsSaysHowManyChecksPassed) {
  RunFolder run;
  run.write("summary_10.json", process_summary(0, {}, {"a"}, 82, {}));
  run.write("summary_11.json", process_summary(0, {}, {"a", "b"}, 82, {}));
  const RunOnlineCheckReport report = run_online_check_report(run.dir.string(), 20);
  EXPECT_EQ(report.line, "online check: no violation of 82 checks (2 triggered, 82 checked, 1 not checked)");
  EXPECT_EQ(report.table, "");
}

// An invariant counts as not evaluated only when no process of the run could evaluate it (a DataLoader
// worker records no parameter state; the main process does): the line moves it from checked to not
// checked and says why.
TEST(ProcessSummaries, RunReportCountsAsNotEvaluatedOnlyWhatNoProcessEvaluated) {
  RunFolder run;
  auto with_unevaluated = [](std::string text, const std::string& members) {
    const size_t end = text.rfind('}');
    return text.substr(0, end) + ", \"unevaluated\": {" + members + "}}";
  };
  const std::string reason = "\"no torch.nn.Parameter state recorded\"";
  run.write("summary_10.json", with_unevaluated(process_summary(0, {}, {"c"}, 82, {}), "\"a\": " + reason + ", \"b\": " + reason));
  run.write("summary_11.json", with_unevaluated(process_summary(0, {}, {}, 82, {}), "\"a\": " + reason));
  const RunOnlineCheckReport report = run_online_check_report(run.dir.string(), 20);
  EXPECT_EQ(report.line,
            "online check: no violation of 81 checks (1 triggered, 81 checked, 2 not checked)\n"
            "online check: 1 invariant not evaluated: no torch.nn.Parameter state recorded (1)");
}

// Killed before any exit handler: failed.log's lines are all the run left, and the line says so.
TEST(ProcessSummaries, RunReportWithoutSummariesCountsFailedLogLines) {
  RunFolder run;
  run.write("failed.log", "{\"a\": 1}\n\n{\"b\": 2}\n{\"c\": 3}\n");
  const RunOnlineCheckReport report = run_online_check_report(run.dir.string(), 20);
  EXPECT_TRUE(report.checked);
  EXPECT_EQ(report.line, "online check: 3 violations (no summary: the program did not exit normally); see " +
                             (run.dir / "failed.log").string());
  EXPECT_EQ(report.table, "");
  EXPECT_FALSE(run_online_check_report((run.dir / "absent").string(), 20).checked);
}

// The program's exit code says why there is no summary; the line never claims an abnormal exit after a
// normal one.
TEST(ProcessSummaries, RunReportWithoutSummariesSaysWhyFromTheExitCode) {
  RunFolder run;
  run.write("failed.log", "");
  const std::string failed = (run.dir / "failed.log").string();
  EXPECT_EQ(run_online_check_report(run.dir.string(), 20, 0).line,
            "online check: 0 violations (no summary: the program exited normally, but the check could not start or "
            "could not write its results; see the warnings above); see " + failed);
  EXPECT_EQ(run_online_check_report(run.dir.string(), 20, 137).line,
            "online check: 0 violations (no summary: the program ended with exit code 137, leaving none); see " + failed);
  fs::remove(failed);  // the check never started: no failed.log to point at
  EXPECT_EQ(run_online_check_report(run.dir.string(), 20, 1).line,
            "online check: nothing checked (no summary: the program ended with exit code 1, leaving none)");
}

}  // namespace
}  // namespace traincheck
