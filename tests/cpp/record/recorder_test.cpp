#include "record/recorder.h"
#include "child_exit.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

using namespace traincheck;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> read_lines(const fs::path& file) {
  std::ifstream in(file);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<fs::path> trace_files(const fs::path& dir) {
  std::vector<fs::path> out;
  for (auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().rfind("trace_API_", 0) == 0) out.push_back(e.path());
  }
  return out;
}

void emit_calls(Recorder& r, uint32_t api, int n) {
  for (int i = 0; i < n; ++i) {
    const uint64_t t = Recorder::next_call_ns();
    r.emit({.kind = EventKind::kCallPre, .api_id = api, .time_ns = t, .call_ns = t});
    r.emit({.kind = EventKind::kCallPost, .api_id = api, .time_ns = monotonic_ns(), .call_ns = t});
  }
}

}  // namespace

// One test: the recorder is a process-wide singleton.
TEST(Recorder, WritesOneFilePerThreadFlushesOnDemandAndForkChildrenWriteTheirOwn) {
  const fs::path dir = fs::temp_directory_path() / ("tc_recorder_test_" + std::to_string(getpid()));
  fs::remove_all(dir);
  Recorder& r = Recorder::instance();
  r.start(dir.string());
  const uint32_t api = r.intern_name("torch.relu");
  const uint32_t snapshots = r.metas().size();
  for (int64_t step = 0; step <= 3; ++step) r.publish_step(step);
  EXPECT_EQ(r.metas().size(), snapshots);  // steps are not interned: a long run cannot fill the table

  emit_calls(r, api, 1000);
  std::thread other([&] { emit_calls(r, api, 10); });
  other.join();
  r.flush();
  auto files = trace_files(dir);
  ASSERT_EQ(files.size(), 2u);
  size_t total = 0;
  for (auto& f : files) {
    for (auto& line : read_lines(f)) {
      ++total;
      EXPECT_NE(line.find("\"meta_vars\":{\"step\":3}"), std::string::npos);
    }
  }
  EXPECT_EQ(total, 2020u);

#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer cannot follow a child that starts threads after a multi-threaded fork (it reports a
  // reused thread id and stops); the fork half runs in the other builds, AddressSanitizer's included.
  r.shutdown();
  fs::remove_all(dir);
  return;
#endif
  const pid_t child = fork();
  if (child == 0) {
    emit_calls(r, api, 5);
    r.shutdown();
    _exit(0);
  }
  const ChildExit ended = wait_for_child(child);
  ASSERT_TRUE(ended.exited) << ended.describe();
  const fs::path child_file = dir / ("trace_API_" + std::to_string(child) + "_" +
                                     std::to_string(static_cast<uint64_t>(pthread_self())) + ".log");
  ASSERT_TRUE(fs::exists(child_file));
  EXPECT_EQ(read_lines(child_file).size(), 10u);  // only the child's own events, none of the parent's

  emit_calls(r, api, 1);  // the parent keeps recording after the fork
  r.shutdown();
  EXPECT_EQ(trace_files(dir).size(), 3u);
  fs::remove_all(dir);
}
