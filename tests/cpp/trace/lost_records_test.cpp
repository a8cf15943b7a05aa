#include "trace/lost_records.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "trace/trace_store.h"

using namespace traincheck;
namespace fs = std::filesystem;

namespace {

std::string api_line(const std::string& id, const std::string& type, const std::string& fn, int64_t time, int64_t tid) {
  return "{\"func_call_id\":\"" + id + "\",\"thread_id\":" + std::to_string(tid) +
         ",\"process_id\":7,\"meta_vars\":{\"step\":1,\"stage\":\"training\"},\"type\":\"function_call (" + type +
         ")\",\"function\":\"" + fn + "\",\"time\":" + std::to_string(time) + "}\n";
}

fs::path fresh_folder(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("tc_lost_records_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void write(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

}  // namespace

TEST(LostRecords, ADamagedLineIsPlacedAfterItsFilesPreviousRecordOnItsThread) {
  std::string text = api_line("a", "pre", "A", 1, 3) + api_line("b", "pre", "B", 2, 3) + "{\"func_call_id\":\"b\",\"thr\n" +
                     api_line("a", "post", "A", 4, 3);
  std::ostringstream warnings;
  ReadOptions options;
  options.warnings = &warnings;
  RawTrace raw = read_trace_text("t.log", text, options);
  ASSERT_EQ(raw.lost.size(), 1u);
  EXPECT_EQ(raw.lost[0].line, 3u);
  TraceStore store("t", std::move(raw), {}, &warnings);
  ASSERT_EQ(store.gaps().size(), 1u);
  const TraceGap& gap = store.gaps()[0];
  EXPECT_EQ(gap.process_id, 7);
  EXPECT_EQ(gap.thread_id, 3);
  ASSERT_NE(gap.after, kNone);
  EXPECT_EQ(store.record(gap.after).function, "B");  // the record before it in its file
  EXPECT_EQ(store.records_lost(), 1u);
  EXPECT_NE(warnings.str().find("checked on an incomplete trace: 1 record lost"), std::string::npos) << warnings.str();
}

TEST(LostRecords, TheRecordersLogPlacesLostLinesByByteOffsetAndCountsTheUnplaced) {
  const fs::path dir = fresh_folder("log");
  const std::string first = api_line("a", "pre", "A", 1, 3), second = api_line("a", "post", "A", 5, 3);
  write(dir / "trace_API_7_3.log", first + second);
  // Lines lost before the second line (at the first line's end), lines past the list, and a file never created.
  write(dir / "traincheck_recorder_7.log", "events_dropped: 0\nwrite_errors: 3\nlost_lines: 4 at " +
                                               std::to_string(first.size()) + " in trace_API_7_3.log\n"
                                               "lost_lines: 2 at 0 in trace_VAR_7_3.log\nlost_lines_unplaced: 5\n"
                                               "lost_lines: garbage\n");
  std::ostringstream warnings;
  const std::vector<std::string> files = list_trace_files(dir.string());
  const std::vector<LostRecords> losses = read_recorder_losses(dir.string(), files, warnings);
  ASSERT_EQ(losses.size(), 3u);
  EXPECT_TRUE(losses[0].placed);
  EXPECT_EQ(losses[0].line, 2u);
  EXPECT_EQ(losses[0].records, 4u);
  EXPECT_FALSE(losses[1].placed);  // its file is not in the trace
  EXPECT_EQ(losses[1].records, 2u);
  EXPECT_FALSE(losses[2].placed);
  EXPECT_EQ(losses[2].records, 5u);
  EXPECT_NE(warnings.str().find("traincheck_recorder_7.log:6: field 'lost_lines'"), std::string::npos) << warnings.str();

  ReadOptions options;
  options.warnings = &warnings;
  TraceStore store = TraceStore::load_folder(dir.string(), options);
  EXPECT_EQ(store.records_lost(), 11u);
  ASSERT_EQ(store.gaps().size(), 1u);
  EXPECT_EQ(store.record(store.gaps()[0].after).type, RecordType::FunctionPre);
  fs::remove_all(dir);
}

TEST(LostRecords, ALogCountingWriteErrorsWithoutPlacesIsALossAtNoKnownPlace) {
  const fs::path dir = fresh_folder("count_only");
  write(dir / "trace_API_7_3.log", api_line("a", "pre", "A", 1, 3));
  write(dir / "traincheck_recorder_7.log", "events_dropped: 0\nwrite_errors: 2\n");
  std::ostringstream warnings;
  const std::vector<LostRecords> losses = read_recorder_losses(dir.string(), list_trace_files(dir.string()), warnings);
  ASSERT_EQ(losses.size(), 1u);
  EXPECT_FALSE(losses[0].placed);
  fs::remove_all(dir);
}
