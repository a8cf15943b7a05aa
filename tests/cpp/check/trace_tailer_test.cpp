// Following growing trace files: new files in a folder are picked up, and a partial last line is held
// back until its newline arrives (the original drops it).
#include "check/online/trace_tailer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

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

namespace {

// Polls until the tailer has caught up, concatenating what it hands out per file; counts the polls.
std::map<std::string, std::string> drain(TraceTailer& tailer, size_t& polls) {
  std::map<std::string, std::string> got;
  auto collect = [&](const std::string& path, std::string_view lines) {
    EXPECT_FALSE(lines.empty());
    EXPECT_EQ(lines.back(), '\n');  // only complete lines
    got[fs::path(path).filename().string()] += std::string(lines);
  };
  polls = 0;
  do {
    tailer.poll(collect, [](const std::string&) {});
    ++polls;
  } while (tailer.behind() && polls < 100000);
  return got;
}

}  // namespace

TEST(TraceTailer, ReadsABacklogInChunksWithLinesSplitAcrossThem) {
  const fs::path dir = fs::temp_directory_path() / ("tc_trace_tailer_chunks_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  // Lines of varying length (1..60 bytes), some longer than the chunk, so chunk ends fall anywhere.
  std::string api, var;
  for (int i = 0; i < 500; ++i) api += std::string(1 + (i * 7) % 60, static_cast<char>('a' + i % 26)) + "\n";
  for (int i = 0; i < 50; ++i) var += "{\"v\": " + std::to_string(i) + "}\n";
  std::ofstream(dir / "trace_API_1_1.log", std::ios::binary) << api << "partial";
  std::ofstream(dir / "trace_VAR_1_1.log", std::ios::binary) << var;

  TraceTailer tailer({dir.string()}, {}, 16);
  size_t polls = 0;
  auto got = drain(tailer, polls);
  EXPECT_EQ(got["trace_API_1_1.log"], api);  // "partial" waits for its newline
  EXPECT_EQ(got["trace_VAR_1_1.log"], var);
  EXPECT_GT(polls, (api.size() + 7) / 16);  // one chunk per file and poll
  EXPECT_FALSE(tailer.behind());

  // The same files read in one go (a chunk larger than the backlog) give the same text in one poll.
  TraceTailer whole({dir.string()}, {});
  auto all = drain(whole, polls);
  EXPECT_EQ(polls, 1u);
  EXPECT_EQ(all, got);

  // The partial line completes later, in the growing-file way.
  std::ofstream(dir / "trace_API_1_1.log", std::ios::binary | std::ios::app) << " end\n";
  got = drain(tailer, polls);
  EXPECT_EQ(got["trace_API_1_1.log"], "partial end\n");
  EXPECT_EQ(got.count("trace_VAR_1_1.log"), 0u);
  fs::remove_all(dir);
}

TEST(TraceTailer, SkippedFilesStayBehindAndAreReadLater) {
  const fs::path dir = fs::temp_directory_path() / ("tc_trace_tailer_skip_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "trace_API_1_1.log") << "{\"a\": 1}\n";
  std::ofstream(dir / "trace_VAR_1_1.log") << "{\"v\": 1}\n";
  TraceTailer tailer({dir.string()}, {});
  std::string got;
  auto collect = [&](const std::string& path, std::string_view lines) { got += fs::path(path).filename().string() + "|" + std::string(lines); };
  auto warn = [](const std::string&) {};
  tailer.poll(collect, warn, [](const std::string& path) { return path.find("VAR") != std::string::npos; });
  EXPECT_EQ(got, "trace_API_1_1.log|{\"a\": 1}\n");
  EXPECT_TRUE(tailer.behind());
  EXPECT_EQ(tailer.behind_files(), std::vector<std::string>{(dir / "trace_VAR_1_1.log").string()});
  got.clear();
  tailer.poll(collect, warn);
  EXPECT_EQ(got, "trace_VAR_1_1.log|{\"v\": 1}\n");
  EXPECT_FALSE(tailer.behind());
  fs::remove_all(dir);
}

TEST(TraceTailer, AShrunkFileIsReadAgainFromItsStart) {
  const fs::path dir = fs::temp_directory_path() / ("tc_trace_tailer_shrink_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "trace_API_1_1.log") << "{\"a\": 1}\n{\"a\": 2}\n";
  TraceTailer tailer({dir.string()}, {}, 4);
  size_t polls = 0;
  drain(tailer, polls);
  std::ofstream(dir / "trace_API_1_1.log", std::ios::trunc) << "{\"b\": 1}\n";  // rotated: a new, shorter file
  std::vector<std::string> warnings;
  std::string got;
  do {
    tailer.poll([&](const std::string&, std::string_view lines) { got += std::string(lines); },
                [&](const std::string& w) { warnings.push_back(w); });
  } while (tailer.behind());
  EXPECT_EQ(got, "{\"b\": 1}\n");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("file shrank"), std::string::npos);
  fs::remove_all(dir);
}

// Rotation: the followed file is renamed and a new file of the same name created. The new
// file is read from its start (its first bytes were skipped: the old offset was kept), and the renamed
// file, still named like a trace, is followed on from where it was, never read twice.
TEST(TraceTailer, ARotatedFileIsNoticedByInodeAndNeitherFileIsSkippedNorReadTwice) {
  const fs::path dir = fs::temp_directory_path() / ("tc_trace_tailer_rotate_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  TraceTailer tailer({dir.string()}, {});
  std::map<std::string, std::string> got;
  std::vector<std::string> warnings;
  auto collect = [&](const std::string& path, std::string_view lines) { got[fs::path(path).filename().string()] += std::string(lines); };
  auto warn = [&](const std::string& w) { warnings.push_back(w); };
  const std::string first = "{\"old\": 1}\n{\"old\": 2}\n";
  std::ofstream(dir / "trace_API_1_1.log") << first;
  tailer.poll(collect, warn);
  EXPECT_EQ(got["trace_API_1_1.log"], first);
  {
    std::ofstream(dir / "trace_API_1_1.log", std::ios::app) << "{\"old\": 3}\n";  // written before the rotation
  }
  fs::rename(dir / "trace_API_1_1.log", dir / "trace_API_1_1.log.1");
  const std::string fresh = "{\"new\": 1}\n{\"new\": 2}\n{\"new\": 3}\n{\"new\": 4}\n";  // longer than the old offset
  std::ofstream(dir / "trace_API_1_1.log") << fresh;
  got.clear();
  tailer.poll(collect, warn);
  EXPECT_EQ(got["trace_API_1_1.log"], fresh);
  EXPECT_EQ(got["trace_API_1_1.log.1"], "{\"old\": 3}\n");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("rotated"), std::string::npos) << warnings[0];
  // Replaced again, this time by a file renamed out of the folder's view: the new one is read whole.
  fs::rename(dir / "trace_API_1_1.log", dir / "elsewhere.txt");
  std::ofstream(dir / "trace_API_1_1.log") << "{\"third\": 1}\n{\"third\": 2}\n{\"third\": 3}\n{\"third\": 4}\n{\"third\": 5}\n";
  got.clear();
  tailer.poll(collect, warn);
  EXPECT_EQ(got["trace_API_1_1.log"], "{\"third\": 1}\n{\"third\": 2}\n{\"third\": 3}\n{\"third\": 4}\n{\"third\": 5}\n");
  EXPECT_EQ(warnings.size(), 2u);
  fs::remove_all(dir);
}
