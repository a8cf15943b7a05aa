// Following growing trace files: new files in a folder are picked up, and a partial last line is held
// back until its newline arrives (the original drops it).
#include "check/trace_tailer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
using namespace traincheck;

TEST(TraceTailer, HandsOutOnlyCompleteLinesAndPicksUpNewFiles) {
  const fs::path dir = fs::temp_directory_path() / ("tc_trace_tailer_" + std::to_string(getpid()));
  fs::remove_all(dir);
  TraceTailer tailer({dir.string()}, {});
  std::string got;
  auto collect = [&](const std::string& path, std::string_view lines) { got += fs::path(path).filename().string() + "|" + std::string(lines); };
  auto warn = [](const std::string&) {};
  EXPECT_EQ(tailer.poll(collect, warn), 0u);  // the folder does not exist yet: not an error
  fs::create_directories(dir);
  std::ofstream api(dir / "trace_API_1_1.log");
  api << "{\"a\": 1}\n{\"a\": 2" << std::flush;
  tailer.poll(collect, warn);
  EXPECT_EQ(got, "trace_API_1_1.log|{\"a\": 1}\n");
  got.clear();
  api << "}\n" << std::flush;
  std::ofstream(dir / "trace_VAR_1_1.log") << "{\"v\": 1}\n";
  std::ofstream(dir / "other.txt") << "ignored\n";
  tailer.poll(collect, warn);
  EXPECT_EQ(got, "trace_API_1_1.log|{\"a\": 2}\ntrace_VAR_1_1.log|{\"v\": 1}\n");
  EXPECT_EQ(tailer.files(), 2u);
  got.clear();
  EXPECT_EQ(tailer.poll(collect, warn), 0u);
  EXPECT_TRUE(got.empty());
  fs::remove_all(dir);
}
