// The record sink (record/record_sink.h): the writer hands every formatted line to the sink, in the
// thread's order and before the file write, ends each pass, closes the sink once at shutdown; a fork
// child runs without it.
#include "record/record_sink.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "record/recorder.h"

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

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST(RecordSink, SeesEveryLineTheFilesGetEndsPassesClosesOnceAndIsDroppedInAForkChild) {
  const fs::path dir = fs::temp_directory_path() / ("tc_record_sink_test_" + std::to_string(getpid()));
  fs::remove_all(dir);
  Recorder& r = Recorder::instance();
  r.start(dir.string());
  Seen seen;
  TcRecordSink sink{TC_RECORD_SINK_VERSION, &seen, &on_lines, &on_pass_end, &on_close};
  TcRecordSink wrong = sink;
  wrong.version = 99;
  EXPECT_FALSE(r.set_sink(&wrong));
  ASSERT_TRUE(r.set_sink(&sink));
  EXPECT_TRUE(r.has_sink());

  const uint32_t api = r.intern_name("torch.relu");
  for (int i = 0; i < 100; ++i) {
    const uint64_t t = Recorder::next_call_ns();
    r.emit({.kind = EventKind::kCallPre, .api_id = api, .time_ns = t, .call_ns = t});
    r.emit({.kind = EventKind::kCallPost, .api_id = api, .time_ns = monotonic_ns(), .call_ns = t});
  }
  r.flush();
  EXPECT_GE(seen.passes, 1);
  const fs::path file = dir / ("trace_API_" + std::to_string(getpid()) + "_" + std::to_string(static_cast<uint64_t>(pthread_self())) + ".log");
  EXPECT_EQ(seen.api, slurp(file));
  EXPECT_EQ(std::count(seen.api.begin(), seen.api.end(), '\n'), 200);

  const pid_t child = fork();
  if (child == 0) _exit(r.has_sink() ? 1 : 0);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "a fork child must not inherit the sink";

  r.shutdown();
  r.shutdown();
  EXPECT_EQ(seen.closes, 1);
  EXPECT_FALSE(r.has_sink());
  EXPECT_EQ(r.stats().sink_errors, 2u);
  EXPECT_NE(slurp(dir / ("traincheck_recorder_" + std::to_string(getpid()) + ".log")).find("sink_errors: 2"), std::string::npos);
  fs::remove_all(dir);
}
