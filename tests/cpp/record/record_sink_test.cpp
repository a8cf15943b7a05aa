// The record sink (record/record_sink.h): the writer hands every formatted line to the sink, in the
// thread's order and before the file write, ends each pass, closes the sink once at shutdown; a fork
// child runs without it, or, when the sink follows forks, with a context of its own that its writer
// thread gets from the sink before its first pass.
#include "record/record_sink.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "record/recorder.h"
#include "child_exit.h"

using namespace traincheck;
namespace fs = std::filesystem;

namespace {

struct Seen {
  std::string api, var;
  int passes = 0, closes = 0, calls = 0;
};

uint64_t on_lines(void* ctx, int kind, uint64_t pid, uint64_t tid, const char* data, size_t size) {
  auto* seen = static_cast<Seen*>(ctx);
  ++seen->calls;
  (kind == TC_SINK_VAR ? seen->var : seen->api).append(data, size);
  EXPECT_EQ(pid, static_cast<uint64_t>(getpid()));
  EXPECT_EQ(data[size - 1], '\n');
  return 0;
}
uint64_t on_pass_end(void* ctx) {
  ++static_cast<Seen*>(ctx)->passes;
  return 0;
}
uint64_t on_close(void* ctx) {
  ++static_cast<Seen*>(ctx)->closes;
  return 2;  // errors are counted into the recorder's log
}

// A sink that follows forks: the child's context is a fresh Seen, made by the call that says from which
// context and on which thread it was made.
Seen* g_child_seen = nullptr;
void* g_forked_from = nullptr;
pthread_t g_made_on{};
uint64_t on_fork_child(void* ctx, void** child) {
  g_forked_from = ctx;
  g_made_on = pthread_self();
  g_child_seen = new Seen();
  *child = g_child_seen;
  return 0;
}

// The process-wide recorder, started in a fresh folder of its own.
fs::path start_recorder_in(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / (name + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  Recorder::instance().start(dir.string());
  return dir;
}

// `n` complete calls of `api` on this thread: 2n lines.
void emit_calls(Recorder& r, uint32_t api, int n) {
  for (int i = 0; i < n; ++i) {
    const uint64_t t = Recorder::next_call_ns();
    r.emit({.kind = EventKind::kCallPre, .api_id = api, .time_ns = t, .call_ns = t});
    r.emit({.kind = EventKind::kCallPost, .api_id = api, .time_ns = monotonic_ns(), .call_ns = t});
  }
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST(RecordSink, SeesEveryLineTheFilesGetEndsPassesClosesOnceAndIsDroppedInAForkChild) {
  const fs::path dir = start_recorder_in("tc_record_sink_test");
  Recorder& r = Recorder::instance();
  Seen seen;
  TcRecordSink sink{TC_RECORD_SINK_VERSION, &seen, &on_lines, &on_pass_end, &on_close, nullptr};  // does not follow forks
  TcRecordSink wrong = sink;
  wrong.version = 99;
  EXPECT_FALSE(r.set_sink(&wrong));
  ASSERT_TRUE(r.set_sink(&sink));
  EXPECT_TRUE(r.has_sink());

  emit_calls(r, r.intern_name("torch.relu"), 100);
  r.flush();
  EXPECT_GE(seen.passes, 1);
  const fs::path file = dir / ("trace_API_" + std::to_string(getpid()) + "_" + std::to_string(static_cast<uint64_t>(pthread_self())) + ".log");
  EXPECT_EQ(seen.api, slurp(file));
  EXPECT_EQ(std::count(seen.api.begin(), seen.api.end(), '\n'), 200);

  const pid_t child = fork();
  if (child == 0) _exit(r.has_sink() ? 1 : 0);
  const ChildExit ended = wait_for_child(child);
  ASSERT_TRUE(ended.exited) << ended.describe();
  EXPECT_EQ(ended.code, 0) << "a fork child must not inherit the sink";

  r.shutdown();
  r.shutdown();
  EXPECT_EQ(seen.closes, 1);
  EXPECT_FALSE(r.has_sink());
  EXPECT_EQ(r.stats().sink_errors, 2u);
  EXPECT_NE(slurp(dir / ("traincheck_recorder_" + std::to_string(getpid()) + ".log")).find("sink_errors: 2"), std::string::npos);
  fs::remove_all(dir);
}

TEST(RecordSink, AForkChildGetsAContextOfItsOwnFromTheSinkOnItsWriterThreadAndClosesIt) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "ThreadSanitizer cannot follow a child that starts threads after a multi-threaded fork";
#endif
  const fs::path dir = start_recorder_in("tc_record_sink_fork_test");
  Recorder& r = Recorder::instance();
  Seen seen;
  TcRecordSink sink{TC_RECORD_SINK_VERSION, &seen, &on_lines, &on_pass_end, &on_close, &on_fork_child};
  ASSERT_TRUE(r.set_sink(&sink));
  const uint32_t api = r.intern_name("torch.relu");
  emit_calls(r, api, 3);
  r.flush();
  const std::string parent_lines = seen.api;

  const pid_t child = fork();
  if (child == 0) {
    // Each failed expectation sets a bit of the exit code (gtest's checks do not cross the fork).
    int code = 0;
    if (!r.has_sink()) code |= 1;
    if (g_child_seen != nullptr) code |= 2;  // not made in the fork handler
    emit_calls(r, api, 5);
    r.flush();
    if (g_child_seen == nullptr || g_forked_from != &seen || pthread_equal(g_made_on, pthread_self())) code |= 4;
    if (g_child_seen != nullptr) {
      const std::string& lines = g_child_seen->api;
      if (std::count(lines.begin(), lines.end(), '\n') != 10) code |= 8;  // the child's records only
      if (lines.find("\"process_id\":" + std::to_string(getpid())) == std::string::npos) code |= 8;
    }
    if (seen.api != parent_lines || seen.closes != 0) code |= 16;  // the parent's context is left alone
    r.shutdown();
    if (g_child_seen == nullptr || g_child_seen->closes != 1 || seen.closes != 0) code |= 32;
    _exit(code);
  }
  const ChildExit ended = wait_for_child(child);
  ASSERT_TRUE(ended.exited) << ended.describe();
  EXPECT_EQ(ended.code, 0) << "bits: 1 no sink in the child, 2 made in the fork handler, 4 not from the parent's "
                                       "context on the child's writer thread, 8 not the child's lines, 16 parent's "
                                       "context used, 32 not closed once";
  EXPECT_EQ(g_child_seen, nullptr);  // the parent never calls on_fork_child
  emit_calls(r, api, 1);
  r.shutdown();
  EXPECT_EQ(std::count(seen.api.begin(), seen.api.end(), '\n'), 8);
  EXPECT_EQ(seen.closes, 1);
  // The child's log counts what its own close returned, and does not say it ran unchecked.
  const std::string child_log = slurp(dir / ("traincheck_recorder_" + std::to_string(child) + ".log"));
  EXPECT_NE(child_log.find("sink_errors: 2"), std::string::npos) << child_log;
  EXPECT_EQ(child_log.find("online check: off"), std::string::npos) << child_log;
  fs::remove_all(dir);
}

TEST(RecordSink, AForkChildWhoseSinkGivesItNoContextRunsWithoutOneAndSaysSo) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "ThreadSanitizer cannot follow a child that starts threads after a multi-threaded fork";
#endif
  const fs::path dir = start_recorder_in("tc_record_sink_nofork_test");
  Recorder& r = Recorder::instance();
  Seen seen;
  auto refuse = [](void*, void** child) -> uint64_t {
    *child = nullptr;
    return 1;
  };
  TcRecordSink sink{TC_RECORD_SINK_VERSION, &seen, &on_lines, &on_pass_end, &on_close, refuse};
  ASSERT_TRUE(r.set_sink(&sink));
  const uint32_t api = r.intern_name("torch.relu");
  const pid_t child = fork();
  if (child == 0) {
    emit_calls(r, api, 1);
    r.flush();
    const bool dropped = !r.has_sink() && seen.api.empty();
    r.shutdown();
    _exit(dropped && seen.closes == 0 ? 0 : 1);
  }
  const ChildExit ended = wait_for_child(child);
  ASSERT_TRUE(ended.exited) << ended.describe();
  EXPECT_EQ(ended.code, 0);
  const std::string log = slurp(dir / ("traincheck_recorder_" + std::to_string(child) + ".log"));
  EXPECT_NE(log.find("sink_errors: 1"), std::string::npos) << log;
  EXPECT_NE(log.find("online check: off in this process"), std::string::npos) << log;
  r.shutdown();
  fs::remove_all(dir);
}
