// The in-process session behind the record sink: lines in through the C function pointers, violations
// in failed.log at once, report.html and summary_<pid>.json at close, exceptions never escape; a fork
// child checks its own records with a session of its own.
#include "check/online/online_session.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "trace/json_parse.h"
#include "child_exit.h"
#include "scratch_dir.h"

namespace fs = std::filesystem;
using namespace traincheck;

namespace {

const std::string kInvariant =
    "{\"text_description\": \"step contains adam\", \"relation\": \"APIContainRelation\", \"params\": [{\"param_type\": "
    "\"APIParam\", \"api_full_name\": \"torch.optim.adam.Adam.step\"}, {\"param_type\": \"APIParam\", \"api_full_name\": "
    "\"torch.optim.adam.adam\"}], \"precondition\": {\"parent_func_call_pre\": {\"inverted\": false, \"preconditions\": "
    "[{\"clauses\": \"Unconditional\"}]}}, \"num_positive_examples\": 5, \"num_negative_examples\": 0}\n";

std::string line(const char* type, int64_t time) {
  return "{\"type\": \"" + std::string(type) + "\", \"function\": \"torch.optim.adam.Adam.step\", \"func_call_id\": \"x" +
         std::to_string(time / 10) + "\", \"process_id\": 7, \"thread_id\": 1, \"time\": " + std::to_string(time) +
         ", \"meta_vars\": {\"step\": 3}}\n";
}

fs::path setup(const std::string& name) {
  const fs::path dir = scratch::empty_dir("online_session_" + name);
  std::ofstream(dir / "inv.json") << kInvariant;
  return dir;
}

OnlineSessionOptions options(const fs::path& dir) {
  OnlineSessionOptions o;
  o.invariant_files = {(dir / "inv.json").string()};
  o.output_dir = (dir / "online_check").string();
  o.signatures_json = "{\"torch.optim.adam.Adam.step\": {\"params\": [{\"name\": \"self\"}, {\"name\": \"closure\"}]}}";
  return o;
}

}  // namespace

TEST(OnlineSession, ViolationsReachFailedLogDuringThePassAndTheSummaryAtClose) {
  const fs::path dir = setup("sink");
  OnlineSession session(options(dir));
  const TcRecordSink sink = session.sink();
  ASSERT_EQ(sink.version, TC_RECORD_SINK_VERSION);
  const std::string text = line("function_call (pre)", 10) + line("function_call (post)", 15);
  EXPECT_EQ(sink.on_lines(sink.context, TC_SINK_API, 7, 1, text.data(), text.size()), 0u);
  EXPECT_EQ(sink.on_pass_end(sink.context), 0u);
  std::ifstream failed(dir / "online_check" / "failed.log");
  std::string first;
  ASSERT_TRUE(std::getline(failed, first));
  EXPECT_NE(first.find("\"violated_id\": 0"), std::string::npos);
  EXPECT_EQ(sink.on_close(sink.context), 0u);
  EXPECT_EQ(session.report_path(), (dir / "online_check" / "report.html").string());
  EXPECT_TRUE(fs::exists(session.report_path()));
  std::string summary_text, error;
  ASSERT_TRUE(read_file(session.summary_path(), summary_text, error)) << error;
  Value summary;
  ASSERT_TRUE(parse_json(summary_text, summary, error)) << error;
  EXPECT_EQ(*summary.find("violations"), Value::integer(1));
  EXPECT_EQ(*summary.find("checked"), Value::integer(1));
  EXPECT_EQ(summary.find("violated_invariants")->as_array().size(), 1u);
  session.finish();  // idempotent
}

// The training thread hears of an invariant's first violation once (take_alerts), and
// with Warn the writer prints it on stderr as it is found, with why to trust it; later violations of the
// same invariant go to failed.log only.
TEST(OnlineSession, AnInvariantsFirstViolationIsPrintedAndQueuedOnceForTheTrainingThread) {
  const fs::path dir = setup("alerts");
  OnlineSessionOptions o = options(dir);
  o.on_violation = ViolationAction::Warn;
  OnlineSession session(o);
  const TcRecordSink sink = session.sink();
  EXPECT_FALSE(session.alerts_waiting());
  EXPECT_TRUE(session.take_alerts().empty());
  testing::internal::CaptureStderr();
  const std::string first = line("function_call (pre)", 10) + line("function_call (post)", 15);
  EXPECT_EQ(sink.on_lines(sink.context, TC_SINK_API, 7, 1, first.data(), first.size()), 0u);
  EXPECT_EQ(sink.on_pass_end(sink.context), 0u);
  const std::string again = line("function_call (pre)", 20) + line("function_call (post)", 25);
  EXPECT_EQ(sink.on_lines(sink.context, TC_SINK_API, 7, 1, again.data(), again.size()), 0u);
  EXPECT_EQ(sink.on_pass_end(sink.context), 0u);
  const std::string printed = testing::internal::GetCapturedStderr();
  EXPECT_EQ(session.counts().violations, 2u);
  ASSERT_TRUE(session.alerts_waiting());
  const std::vector<ViolationAlert> alerts = session.take_alerts();
  ASSERT_EQ(alerts.size(), 1u);
  EXPECT_EQ(alerts[0].relation, "APIContainRelation");
  EXPECT_EQ(alerts[0].description, "step contains adam");
  EXPECT_EQ(alerts[0].step, 3);
  EXPECT_EQ(alerts[0].examples, 5);
  EXPECT_FALSE(alerts[0].held_on_programs.has_value());
  EXPECT_FALSE(session.alerts_waiting());
  EXPECT_TRUE(session.take_alerts().empty());
  // One line, for the first violation only.
  EXPECT_EQ(std::count(printed.begin(), printed.end(), '\n'), 1) << printed;
  // The records have no stage: the checker's default, "init".
  EXPECT_EQ(printed.rfind("traincheck: violation at step 3 (init): Adam.step() always calls adam() (held on 5 examples); see ", 0), 0u)
      << printed;
  EXPECT_NE(printed.find("failed.log"), std::string::npos) << printed;
  EXPECT_EQ(sink.on_close(sink.context), 0u);
}

TEST(OnlineSession, WithLogTheFirstViolationIsQueuedButNotPrinted) {
  const fs::path dir = setup("alerts_log");
  OnlineSessionOptions o = options(dir);
  o.on_violation = ViolationAction::Log;
  OnlineSession session(o);
  const TcRecordSink sink = session.sink();
  testing::internal::CaptureStderr();
  const std::string text = line("function_call (pre)", 10) + line("function_call (post)", 15);
  EXPECT_EQ(sink.on_lines(sink.context, TC_SINK_API, 7, 1, text.data(), text.size()), 0u);
  EXPECT_EQ(sink.on_pass_end(sink.context), 0u);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(session.take_alerts().size(), 1u);
  EXPECT_EQ(sink.on_close(sink.context), 0u);
}

// Regression (docs/README.md §Rules of the hot path, rule 7): a checker that cannot keep up made the writer fall behind
// without bound (80k records at exit, ranks that never exited). Once the records handed over are
// max_lag_s older than at the first pass, checking stops: later lines are counted, not checked, and the
// summary says so; the sink stays cheap, so the trace and the exit go on.
TEST(OnlineSession, ChecksNoMoreOnceTheWriterFallsBehindAndCountsWhatItSkipped) {
  const fs::path dir = setup("shed");
  OnlineSession session(options(dir));
  const TcRecordSink sink = session.sink();
  const int64_t now =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count() / 10 * 10;
  auto pass = [&](int64_t time) {  // one call, pre and post (same func_call_id: time / 10)
    const std::string text = line("function_call (pre)", time) + line("function_call (post)", time + 5);
    EXPECT_EQ(sink.on_lines(sink.context, TC_SINK_API, 7, 1, text.data(), text.size()), 0u);
    EXPECT_EQ(sink.on_pass_end(sink.context), 0u);
  };
  pass(now);                        // the first pass: the lag it sees is the reference
  EXPECT_FALSE(session.shed_stats().shed);
  pass(now - 60'000'000'000LL);     // records a minute older than the first ones: the writer lags 60 s
  EXPECT_TRUE(session.shed_stats().shed);
  EXPECT_EQ(session.counts().violations, 2u);  // that pass was still checked
  pass(now + 1000);                 // not checked
  EXPECT_EQ(session.counts().violations, 2u);
  EXPECT_EQ(sink.on_close(sink.context), 0u);
  std::string summary_text, error;
  ASSERT_TRUE(read_file(session.summary_path(), summary_text, error)) << error;
  Value summary;
  ASSERT_TRUE(parse_json(summary_text, summary, error)) << error;
  const Value* shed = summary.find("shed");
  ASSERT_NE(shed, nullptr);
  EXPECT_EQ(*shed->find("shed"), Value::boolean(true));
  EXPECT_EQ(*shed->find("lines_not_checked"), Value::integer(2));
  EXPECT_EQ(*shed->find("at_step"), Value::integer(3));
  EXPECT_GT(shed->find("lag_s")->as_double(), 50.0);
}

TEST(OnlineSession, ASecondSessionOfTheRunWritesItsOwnReport) {
  const fs::path dir = setup("second");
  OnlineSession first(options(dir));
  OnlineSession second(options(dir));
  EXPECT_EQ(fs::path(first.report_path()).filename(), "report.html");
  EXPECT_EQ(fs::path(second.report_path()).filename(), "report_" + std::to_string(getpid()) + ".html");
}

TEST(OnlineSession, ABadInvariantFileIsAnErrorAtStartNamingTheFile) {
  const fs::path dir = setup("bad");
  std::ofstream(dir / "inv.json") << "{\"relation\": \n";
  try {
    OnlineSession session(options(dir));
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("inv.json:1"), std::string::npos) << e.what();
  }
}

TEST(OnlineSession, AForkChildChecksItsOwnRecordsWithASessionOfItsOwnAndLeavesTheParentsAlone) {
  const fs::path dir = setup("fork");
  OnlineSession session(options(dir));
  const TcRecordSink sink = session.sink();
  ASSERT_NE(sink.on_fork_child, nullptr);
  const std::string violating = line("function_call (pre)", 10) + line("function_call (post)", 15);
  const pid_t child = fork();
  if (child == 0) {
    // Each failed expectation sets a bit of the exit code (gtest's checks do not cross the fork).
    int code = 0;
    void* own = nullptr;
    if (sink.on_fork_child(sink.context, &own) != 0 || own == nullptr || own == sink.context) _exit(1);
    if (sink.on_lines(own, TC_SINK_API, 7, 1, violating.data(), violating.size()) != 0) code |= 2;
    if (sink.on_pass_end(own) != 0) code |= 2;
    if (session.counts().violations != 0) code |= 4;  // the parent's copy saw nothing
    if (sink.on_close(own) != 0) code |= 8;
    _exit(code);
  }
  const ChildExit ended = wait_for_child(child);
  ASSERT_TRUE(ended.exited) << ended.describe();
  ASSERT_EQ(ended.code, 0) << "bits: 1 no context of its own, 2 errors checking, 4 parent's state changed, 8 close";

  // The child appended its violation to the run's failed.log and wrote its own summary and report.
  std::ifstream failed(dir / "online_check" / "failed.log");
  std::string first;
  ASSERT_TRUE(std::getline(failed, first));
  EXPECT_NE(first.find("torch.optim.adam.Adam.step"), std::string::npos);
  const std::string pid = std::to_string(child);
  EXPECT_TRUE(fs::exists(dir / "online_check" / ("report_" + pid + ".html")));
  std::string summary_text, error;
  ASSERT_TRUE(read_file((dir / "online_check" / ("summary_" + pid + ".json")).string(), summary_text, error)) << error;
  Value summary;
  ASSERT_TRUE(parse_json(summary_text, summary, error)) << error;
  EXPECT_EQ(*summary.find("violations"), Value::integer(1));

  // The parent goes on with its own records and state.
  EXPECT_EQ(session.counts().violations, 0u);
  const std::string parents = line("function_call (pre)", 20) + line("function_call (post)", 25);
  EXPECT_EQ(sink.on_lines(sink.context, TC_SINK_API, 7, 1, parents.data(), parents.size()), 0u);
  EXPECT_EQ(sink.on_pass_end(sink.context), 0u);
  EXPECT_EQ(session.counts().violations, 1u);  // its own Adam.step without adam
  EXPECT_EQ(sink.on_close(sink.context), 0u);
  EXPECT_TRUE(fs::exists(session.summary_path()));
  EXPECT_EQ(fs::path(session.report_path()).filename(), "report.html");
}

// A link planted in online_check/ under an output's name is never written through: invariants.json and
// failed.log refused (the session does not start, naming it), report.html and summary_<pid>.json refused
// at close while the other is still written.
TEST(OnlineSession, ALinkPlantedUnderAnOutputNameIsNeverWrittenThrough) {
  const fs::path dir = setup("links");
  const fs::path victim = dir / "victim.txt";
  std::ofstream(victim) << "precious\n";
  const fs::path out = dir / "online_check";
  auto victim_text = [&] {
    std::ifstream in(victim);
    std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return s;
  };
  fs::create_directories(out);
  fs::create_symlink(victim, out / "failed.log");
  try {
    OnlineSession session(options(dir));
    FAIL() << "started on a failed.log that is a link";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find((out / "failed.log").string() + ": is a symbolic link"), std::string::npos) << e.what();
  }
  fs::remove_all(out);
  fs::create_directories(out);
  fs::create_symlink(dir / "absent.json", out / "invariants.json");  // dangling: not created through either
  try {
    OnlineSession session(options(dir));
    FAIL() << "started on an invariants.json that is a link";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find((out / "invariants.json").string() + ": is a symbolic link"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir / "absent.json"));
  fs::remove_all(out);
  fs::create_directories(out);
  fs::create_symlink(victim, out / ("summary_" + std::to_string(::getpid()) + ".json"));
  {
    OnlineSession session(options(dir));
    const TcRecordSink sink = session.sink();
    const std::string text = line("function_call (pre)", 10) + line("function_call (post)", 15);
    sink.on_lines(sink.context, TC_SINK_API, 7, 1, text.data(), text.size());
    sink.on_close(sink.context);
    EXPECT_TRUE(fs::exists(session.report_path())) << "the report is written although the summary is refused";
    EXPECT_GE(session.errors(), 1u);
  }
  fs::remove_all(out);
  fs::create_directories(out);
  fs::create_symlink(victim, out / "report.html");
  {
    OnlineSession session(options(dir));
    EXPECT_EQ(session.report_path(), (out / "report.html").string());
    session.sink().on_close(session.sink().context);
    EXPECT_TRUE(fs::exists(session.summary_path())) << "the summary is written although the report is refused";
    EXPECT_TRUE(fs::is_symlink(out / "report.html"));
  }
  EXPECT_EQ(victim_text(), "precious\n");
}
