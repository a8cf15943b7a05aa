#include "trace/trace_reader.h"

#include <gtest/gtest.h>
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif
#include <unistd.h>

#include <cmath>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "trace/json_parse.h"
#include "trace/shared_fields.h"

using namespace traincheck;

namespace {

std::string api_line(const std::string& id, const std::string& type, const std::string& fn, int64_t time,
                     const std::string& extra = "") {
  return "{\"func_call_id\":\"" + id + "\",\"thread_id\":1,\"process_id\":7,\"meta_vars\":{\"step\":1,\"stage\":\"training\"}," +
         "\"type\":\"" + type + "\",\"function\":\"" + fn + "\",\"is_bound_method\":false,\"obj_id\":null," + extra +
         "\"time\":" + std::to_string(time) + "}\n";
}

RawTrace read(const std::string& text, std::ostringstream& warnings) {
  ReadOptions opt;
  opt.warnings = &warnings;
  return read_trace_text("mem.log", text, opt);
}

}  // namespace

TEST(TraceReader, DamagedLastLineIsSkippedWithAWarningAndTheRestKept) {
  std::string text = api_line("a", "function_call (pre)", "f", 10) + api_line("a", "function_call (post)", "f", 20);
  text += "{\"func_call_id\":\"b\",\"thread_id\":1,\"proc";  // writer killed mid-line
  std::ostringstream warnings;
  RawTrace t = read(text, warnings);
  ASSERT_EQ(t.records.size(), 2u);
  EXPECT_EQ(t.skipped_lines, 1u);
  EXPECT_NE(warnings.str().find("mem.log:3"), std::string::npos) << warnings.str();
}

TEST(TraceReader, DamagedLineInTheMiddleIsSkippedWithAWarningNamingFileAndLine) {
  // A write cut short by a full disk leaves a torn line mid-file once space comes back: one bad line
  // must not cost the whole trace.
  std::string text = api_line("a", "function_call (pre)", "f", 10) + "{\"func_call_id\":\"x\",\"thr\n" +
                     api_line("a", "function_call (post)", "f", 20);
  std::ostringstream warnings;
  RawTrace t = read(text, warnings);
  EXPECT_EQ(t.records.size(), 2u);
  EXPECT_EQ(t.skipped_lines, 1u);
  EXPECT_NE(warnings.str().find("mem.log:2: invalid JSON"), std::string::npos) << warnings.str();
}

TEST(TraceReader, ALineMissingARequiredFieldIsSkippedNamingTheField) {
  std::string text = "{\"func_call_id\":\"a\",\"thread_id\":1,\"process_id\":7,\"type\":\"function_call (pre)\",\"time\":5}\n" +
                     api_line("a", "function_call (post)", "f", 20) + api_line("b", "function_call (middle)", "f", 30);
  std::ostringstream warnings;
  RawTrace t = read(text, warnings);
  EXPECT_EQ(t.records.size(), 1u);
  EXPECT_NE(warnings.str().find("mem.log:1: field 'function'"), std::string::npos) << warnings.str();
  EXPECT_NE(warnings.str().find("mem.log:3: field 'type': unknown record type"), std::string::npos) << warnings.str();
}

TEST(TraceReader, AFileWithoutOneValidRecordIsAnErrorWithItsFirstProblemShortened) {
  const std::string long_garbage = "{\"type\":\"" + std::string(100000, 'x') + "\"}\n";
  std::ostringstream warnings;
  try {
    read("not a trace\n" + long_garbage, warnings);
    FAIL() << "expected TraceReadError";
  } catch (const TraceReadError& e) {
    EXPECT_EQ(e.file(), "mem.log");
    EXPECT_EQ(e.line(), 1u);
    EXPECT_LT(std::string(e.what()).size(), 400u);
  }
  try {
    read(long_garbage, warnings);
    FAIL() << "expected TraceReadError";
  } catch (const TraceReadError& e) {
    EXPECT_LT(std::string(e.what()).size(), 400u) << "a message quotes at most about 200 characters";
    EXPECT_NE(std::string(e.what()).find("characters)"), std::string::npos);
  }
}

TEST(TraceReader, BothAttributePrefixSpellingsAreOneField) {
  const std::string old_line =
      "{\"var_name\":\"w\",\"var_type\":\"torch.nn.Parameter\",\"process_id\":1,\"thread_id\":1,\"meta_vars\":{\"step\":0},"
      "\"type\":\"state_change\",\"attributes\":{\"_ML_DAIKON_data_ID\":5,\"data\":1},\"time\":1}\n";
  const std::string new_line =
      "{\"var_name\":\"w\",\"var_type\":\"torch.nn.Parameter\",\"process_id\":1,\"thread_id\":1,\"meta_vars\":{\"step\":0},"
      "\"type\":\"state_change\",\"attributes\":{\"_TRAINCHECK_data_ID\":5,\"data\":1},\"time\":2}\n";
  std::ostringstream warnings;
  RawTrace t = read(old_line + new_line, warnings);
  ASSERT_EQ(t.records.size(), 2u);
  const Value* a = t.records[0].get("attributes._TRAINCHECK_data_ID");
  const Value* b = t.records[1].get("attributes._ML_DAIKON_data_ID");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(*a, *b);
}

TEST(TraceReader, MixedWhitespaceAndFlattening) {
  const std::string spaced =
      "  {\"func_call_id\": \"a\", \"thread_id\": 1, \"process_id\": 7,\t\"meta_vars\": {\"step\": 3, \"stage\": \"training\","
      " \"context\": {}}, \"type\": \"function_call (pre)\", \"function\": \"f\", \"args\": {\"0\": {\"int\": 2}}, \"time\": 1}  \r\n";
  std::ostringstream warnings;
  RawTrace t = read(spaced + "\n\n" + api_line("a", "function_call (post)", "f", 2), warnings);
  ASSERT_EQ(t.records.size(), 2u);
  const Record& r = t.records[0];
  EXPECT_TRUE(r.has_step);
  EXPECT_EQ(r.step, 3);
  EXPECT_EQ(r.stage, "training");
  // args stays nested; empty objects stay values.
  const Value* args = r.get("args");
  ASSERT_NE(args, nullptr);
  ASSERT_TRUE(args->is_object());
  EXPECT_EQ(to_json(*args), "{\"0\":{\"int\":2}}");
  const Value* empty = r.get("meta_vars.context");
  ASSERT_NE(empty, nullptr);
  EXPECT_TRUE(empty->is_object());
  EXPECT_EQ(r.get("meta_vars"), nullptr);
}

TEST(TraceReader, MissingStageBecomesInit) {
  const std::string line = "{\"func_call_id\":\"a\",\"thread_id\":1,\"process_id\":7,\"meta_vars\":{\"step\":1},"
                           "\"type\":\"function_call (pre)\",\"function\":\"f\",\"time\":1}\n";
  std::ostringstream warnings;
  RawTrace t = read(line, warnings);
  ASSERT_EQ(t.records.size(), 1u);
  EXPECT_EQ(t.records[0].stage, "init");
}

TEST(TraceReader, AStageThatIsNoStringIsABadLineNamingTheField) {
  // Found by the trace_line fuzzer: `"meta_vars.stage": false` was accepted with no stage at all.
  const std::string good = "{\"func_call_id\":\"a\",\"thread_id\":1,\"process_id\":7,\"meta_vars\":{\"step\":1},"
                           "\"type\":\"function_call (pre)\",\"function\":\"f\",\"time\":1}\n";
  const std::string bad = "{\"func_call_id\":\"b\",\"thread_id\":1,\"process_id\":7,\"meta_vars.stage\":false,"
                          "\"type\":\"function_call (pre)\",\"function\":\"f\",\"time\":2}\n";
  std::ostringstream warnings;
  RawTrace t = read(good + bad, warnings);
  ASSERT_EQ(t.records.size(), 1u);
  EXPECT_NE(warnings.str().find("meta_vars.stage"), std::string::npos) << warnings.str();
  EXPECT_NE(warnings.str().find(":2"), std::string::npos) << warnings.str();
}

TEST(TraceReader, NanNullAndMissingAreDistinct) {
  // Stdlib json (proxy_log.json) writes NaN literals; null is None; an absent key is missing.
  const std::string line =
      "{\"var_name\":\"w\",\"var_type\":\"t\",\"process_id\":1,\"thread_id\":1,\"meta_vars\":{\"step\":0},\"type\":\"state_change\","
      "\"attributes\":{\"a\":NaN,\"b\":null,\"c\":-Infinity,\"s\":\"NaN inside a string\"},\"time\":1}\n";
  std::ostringstream warnings;
  RawTrace t = read(line, warnings);
  ASSERT_EQ(t.records.size(), 1u);
  const Record& r = t.records[0];
  ASSERT_NE(r.get("attributes.a"), nullptr);
  EXPECT_TRUE(r.get("attributes.a")->is_nan());
  EXPECT_FALSE(*r.get("attributes.a") == *r.get("attributes.a"));  // NaN equals nothing
  ASSERT_NE(r.get("attributes.b"), nullptr);
  EXPECT_TRUE(r.get("attributes.b")->is_null());
  EXPECT_EQ(*r.get("attributes.b"), Value::null());
  EXPECT_TRUE(std::isinf(r.get("attributes.c")->as_double()));
  EXPECT_EQ(r.get("attributes.s")->as_string(), "NaN inside a string");
  EXPECT_EQ(r.get("attributes.missing"), nullptr);
}

TEST(Value, NumbersCompareAndHashByValueAcrossIntAndFloat) {
  EXPECT_EQ(Value::integer(2), Value::real(2.0));
  EXPECT_EQ(Value::integer(2).hash(), Value::real(2.0).hash());
  EXPECT_NE(Value::integer(2), Value::real(2.5));
  EXPECT_NE(Value::integer(2), Value::string("2"));
  EXPECT_NE(Value::boolean(true), Value::integer(1));
  // Large int64 hashes are not rounded into each other through double.
  EXPECT_NE(Value::integer(9007199254740993LL), Value::real(9007199254740992.0));
  Value parsed;
  std::string error;
  ASSERT_TRUE(parse_json("{\"x\":[1,2.0,{\"k\":null}]}", parsed, error));
  Value other;
  ASSERT_TRUE(parse_json("{\"x\":[1.0,2,{\"k\":null}]}", other, error));
  EXPECT_EQ(parsed, other);
  EXPECT_EQ(parsed.hash(), other.hash());
}

TEST(TraceReader, IdsAndTimesBeyondInt64AreSaturatedNotUndefined) {
  // Found by fuzz/trace_line_fuzzer: a number past int64's range is read as a double, and casting it
  // to int64 was undefined behaviour (UBSan stopped the process).
  const std::string line =
      "{\"func_call_id\":\"a\",\"thread_id\":14000040000000000001,\"process_id\":-1e300,"
      "\"meta_vars\":{\"step\":1},\"type\":\"function_call (pre)\",\"function\":\"f\",\"time\":5}\n";
  std::ostringstream warnings;
  RawTrace t = read(line, warnings);
  ASSERT_EQ(t.records.size(), 1u);
  EXPECT_EQ(t.records[0].thread_id, INT64_MAX);
  EXPECT_EQ(t.records[0].process_id, INT64_MIN);
  EXPECT_EQ(Value::real(std::nan("")).as_int(), 0);
  EXPECT_EQ(Value::real(-2.7).as_int(), -2);
}

TEST(Value, AssigningAValueItsOwnPayloadOrAnotherKeepsReferenceCountsExact) {
  // Assigning a value of the same payload touches no count (a record copied over one sharing its
  // fields: the Consistency check's reused ends); any other assignment moves one reference.
  const Value a = Value::string(std::string(40, 'a'));
  const Value b = Value::string(std::string(40, 'b'));
  Value held = a;
  EXPECT_EQ(a.payload_references(), 2u);
  held = a;
  const Value& self = held;
  held = self;
  EXPECT_EQ(a.payload_references(), 2u);
  EXPECT_TRUE(held.same_payload(a));
  held = b;
  EXPECT_EQ(a.payload_references(), 1u);
  EXPECT_EQ(b.payload_references(), 2u);
  held = Value::integer(3);
  EXPECT_EQ(b.payload_references(), 1u);
  EXPECT_EQ(held.as_int(), 3);
}

#if defined(__SANITIZE_ADDRESS__)
TEST(Value, PayloadsHeldAtFourByteAlignedSlotsAreReachableForTheLeakChecker) {
  // Found by fuzz/trace_line_fuzzer: every other Value of an array keeps its payload pointer at a
  // 4-mod-8 address, which LeakSanitizer skips unless told to scan unaligned words; the parser's caches
  // then looked like leaks. scripts/run_sanitizers.sh sets LSAN_OPTIONS=use_unaligned=1.
  static auto* held = new std::vector<Value>();
  for (int i = 0; i < 8; ++i) held->push_back(Value::string(std::string(40, static_cast<char>('a' + i))));
  EXPECT_EQ(__lsan_do_recoverable_leak_check(), 0);
}
#endif

TEST(TraceReader, FolderListsTraceFilesAndProxyLog) {
  const auto dir = std::filesystem::temp_directory_path() / ("tc_reader_folder_test_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "trace_API_7_1.log") << api_line("a", "function_call (pre)", "f", 1) << api_line("a", "function_call (post)", "f", 3);
  std::ofstream(dir / "proxy_log.json")
      << "{\"var_name\": \"w\", \"var_type\": \"t\", \"mode\": \"update\", \"process_id\": 7, \"thread_id\": 1, \"time\": 2, "
         "\"meta_vars\": {\"step\": 0}, \"attributes\": {\"data\": 1}, \"type\": \"state_change\"}\n";
  std::ofstream(dir / "program_output.txt") << "not a trace\n";
  auto files = list_trace_files(dir.string());
  ASSERT_EQ(files.size(), 2u);
  RawTrace t = read_trace_files(files);
  EXPECT_EQ(t.records.size(), 3u);
  std::filesystem::remove_all(dir);
}

TEST(TraceReader, OnlyPlainFilesAreReadAndTraceNamedOthersAreErrorsNamingThem) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("tc_reader_not_plain_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "trace_API_2_2.log");  // a folder named like a trace file
  std::string text, error;
  // A folder given as a file: a clear error (it used to read as a huge size: std::bad_alloc).
  EXPECT_FALSE(read_file(dir.string(), text, error));
  EXPECT_EQ(error, "is a folder, not a file");
  try {
    list_trace_files(dir.string());
    FAIL() << "a folder named like a trace file was listed or skipped";
  } catch (const TraceReadError& e) {
    EXPECT_NE(std::string(e.what()).find("trace_API_2_2.log"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("is a folder"), std::string::npos) << e.what();
  }
  fs::remove_all(dir / "trace_API_2_2.log");
  // A link to a device never ends: refused without reading.
  fs::create_symlink("/dev/zero", dir / "trace_API_1_1.log");
  EXPECT_FALSE(read_file((dir / "trace_API_1_1.log").string(), text, error));
  EXPECT_NE(error.find("not a plain file"), std::string::npos);
  EXPECT_THROW(list_trace_files(dir.string()), TraceReadError);
  fs::remove_all(dir);
}

TEST(TraceReader, AFileLargerThanTheReadBlockGivesTheRecordsOfOneWholeRead) {
  // ~12 MiB: lines cross the reader's 8 MiB block boundary; a bad line sits in the middle and the last
  // line has no newline.
  std::string text;
  int64_t t = 0;
  auto line = [&](int i) {
    return "{\"type\": \"function_call (pre)\", \"function\": \"f" + std::to_string(i % 7) + "\", \"func_call_id\": \"c" +
           std::to_string(i) + "\", \"process_id\": 1, \"thread_id\": 1, \"time\": " + std::to_string(++t) +
           ", \"args\": {\"0\": {\"int\": " + std::to_string(i % 3) + "}}, \"kwargs\": {\"pad\": \"" + std::string(i % 90, 'x') + "\"}}";
  };
  int i = 0;
  while (text.size() < (size_t{12} << 20)) {
    text += line(i++) + "\n";
    if (i == 40000) text += "{\"type\": broken\n";
  }
  text += line(i++);
  const std::filesystem::path path = std::filesystem::temp_directory_path() / ("tc_big_trace_" + std::to_string(::getpid()) + ".log");
  std::ofstream(path, std::ios::binary) << text;
  std::ostringstream warn_file, warn_text;
  ReadOptions file_options, text_options;
  file_options.warnings = &warn_file;
  text_options.warnings = &warn_text;
  const RawTrace from_file = read_trace_files({path.string()}, file_options);
  const RawTrace from_text = read_trace_text(path.string(), text, text_options);
  std::filesystem::remove(path);
  EXPECT_EQ(from_file.bytes, text.size());
  EXPECT_EQ(from_file.skipped_lines, 1u);
  EXPECT_EQ(warn_file.str(), warn_text.str());
  EXPECT_NE(warn_file.str().find(":40001:"), std::string::npos) << warn_file.str();
  ASSERT_EQ(from_file.records.size(), static_cast<size_t>(i));
  ASSERT_EQ(from_text.records.size(), from_file.records.size());
  for (size_t r = 0; r < from_file.records.size(); ++r) {
    const Record& a = from_file.records[r];
    const Record& b = from_text.records[r];
    ASSERT_EQ(a.line, b.line);
    ASSERT_EQ(to_json(a.to_value()), to_json(b.to_value())) << "line " << a.line;
  }
  EXPECT_EQ(from_file.records.back().func_call_id(), "c" + std::to_string(i - 1));
}

// A file cut into many pieces parsed on several threads reads as one whole read: the same records and
// line numbers, and the same warnings (the first five bad lines of the file in line order, then a count),
// though its bad lines fall in different pieces.
TEST(TraceReader, AFileReadInPiecesGivesTheRecordsAndWarningsOfOneWholeRead) {
  std::string text;
  for (int i = 0; i < 300; ++i) {
    text += "{\"type\": \"function_call (pre)\", \"function\": \"f" + std::to_string(i % 5) + "\", \"func_call_id\": \"c" +
            std::to_string(i) + "\", \"process_id\": 1, \"thread_id\": 1, \"time\": " + std::to_string(i) + "}\n";
    if (i % 40 == 7) text += "{\"type\": broken\n";
    if (i % 50 == 3) text += "\n   \n";
  }
  text += "{\"type\": \"function_call (pre)\", \"function\": \"g\", \"func_call_id\": \"last\", \"process_id\": 1, \"thread_id\": 1, \"time\": 999}";
  const std::filesystem::path path = std::filesystem::temp_directory_path() / ("tc_pieces_" + std::to_string(::getpid()) + ".log");
  std::ofstream(path, std::ios::binary) << text;
  std::ostringstream warn_pieces, warn_text;
  ReadOptions pieces_options, text_options;
  pieces_options.warnings = &warn_pieces;
  pieces_options.threads = 3;
  pieces_options.piece_bytes = 500;  // about 4 lines a piece
  text_options.warnings = &warn_text;
  const RawTrace pieces = read_trace_files({path.string()}, pieces_options);
  const RawTrace whole = read_trace_text(path.string(), text, text_options);
  EXPECT_EQ(pieces.bytes, text.size());
  EXPECT_EQ(pieces.skipped_lines, 8u);
  EXPECT_EQ(warn_pieces.str(), warn_text.str());
  EXPECT_NE(warn_pieces.str().find("8 lines skipped in all"), std::string::npos) << warn_pieces.str();
  ASSERT_EQ(pieces.records.size(), 301u);
  ASSERT_EQ(whole.records.size(), pieces.records.size());
  for (size_t r = 0; r < pieces.records.size(); ++r) {
    ASSERT_EQ(pieces.records[r].line, whole.records[r].line);
    ASSERT_EQ(to_json(pieces.records[r].to_value()), to_json(whole.records[r].to_value())) << "line " << whole.records[r].line;
  }
  EXPECT_EQ(pieces.records.back().func_call_id(), "last");

  // Not one valid record in any piece: an error naming the file's first bad line.
  std::ofstream(path, std::ios::binary) << std::string(50, '\n') + [] {
    std::string bad;
    for (int i = 0; i < 100; ++i) bad += "{\"type\": broken " + std::to_string(i) + "}\n";
    return bad;
  }();
  try {
    read_trace_files({path.string()}, pieces_options);
    ADD_FAILURE() << "a file without a valid record was read";
  } catch (const TraceReadError& e) {
    EXPECT_EQ(e.line(), 51u);
  }
  std::filesystem::remove(path);
}

TEST(TraceReader, SharedArraysAndObjectsKeepIntsAndFloatsApart) {
  const RawTrace t = read_trace_text("t.log",
      "{\"type\": \"function_call (pre)\", \"function\": \"f\", \"func_call_id\": \"a\", \"process_id\": 1, \"thread_id\": 1, \"time\": 1, \"args\": {\"0\": [2]}}\n"
      "{\"type\": \"function_call (pre)\", \"function\": \"f\", \"func_call_id\": \"b\", \"process_id\": 1, \"thread_id\": 1, \"time\": 2, \"args\": {\"0\": [2.0]}}\n"
      "{\"type\": \"function_call (pre)\", \"function\": \"f\", \"func_call_id\": \"c\", \"process_id\": 1, \"thread_id\": 1, \"time\": 3, \"args\": {\"0\": [2]}}\n");
  ASSERT_EQ(t.records.size(), 3u);
  const KeyId args = keys().args;
  EXPECT_EQ(to_json(*t.records[0].get(args)), "{\"0\":[2]}");
  EXPECT_EQ(to_json(*t.records[1].get(args)), "{\"0\":[2.0]}");
  EXPECT_EQ(to_json(*t.records[2].get(args)), "{\"0\":[2]}");
  EXPECT_TRUE(t.records[0].get(args)->same_payload(*t.records[2].get(args)));
  EXPECT_FALSE(t.records[0].get(args)->same_payload(*t.records[1].get(args)));
}

namespace {

namespace fs = std::filesystem;

// Trace text of `n` pre-records of alternating functions, with a blank line and a torn line in the
// middle of the file.
std::string calls_text(const std::string& tag, int n) {
  std::string text;
  for (int i = 0; i < n; ++i) {
    text += api_line(tag + std::to_string(i), "function_call (pre)", i % 2 ? "g" : "f", i + 1, "\"args\":{},");
    if (i == n / 2) text += "\n{\"type\": torn\n";
  }
  return text;
}

fs::path write_temp(const std::string& name, const std::string& text) {
  const fs::path path = fs::temp_directory_path() / (name + "_" + std::to_string(::getpid()) + ".log");
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

}  // namespace

TEST(TraceReader, FilesFillTheirSlicesAndGapsCloseInFileAndLineOrder) {
  // Each file's records are parsed into a slice sized by its line count; the blank and torn lines
  // leave gaps that must close without reordering or losing a record, also when a file has grown
  // since it was counted (counts smaller than the files).
  const fs::path a = write_temp("tc_slices_a", calls_text("a", 9));
  const fs::path b = write_temp("tc_slices_b", calls_text("b", 5));
  std::ostringstream quiet;
  ReadOptions options;
  options.warnings = &quiet;
  const RawTrace counted = read_trace_files({a.string(), b.string()}, options);
  const RawTrace grown = read_trace_files_counted({a.string(), b.string()}, {3, 1}, options);
  fs::remove(a);
  fs::remove(b);
  for (const RawTrace* t : {&counted, &grown}) {
    ASSERT_EQ(t->records.size(), 14u);
    EXPECT_EQ(t->skipped_lines, 2u);
    for (size_t i = 0; i < 14; ++i) {
      const Record& r = t->records[i];
      const bool first_file = i < 9;
      EXPECT_EQ(r.file, first_file ? 0u : 1u);
      EXPECT_EQ(r.func_call_id(), (first_file ? "a" : "b") + std::to_string(first_file ? i : i - 9));
    }
  }
}

TEST(TraceReader, SharedFieldsReadAsTheRecordsOwnAndOwnFieldsShadowThem) {
  // Values that repeat across a file's records are stored once (shared_fields.h); a key seen with more
  // than kMaxDistinct values (here time, step and the call id) stays with each record. Lookups,
  // iteration and the record's JSON must not tell the difference.
  std::string text;
  const size_t n = SharedFieldBlocks::kMaxDistinct + 10;
  for (size_t i = 0; i < n; ++i)
    text += api_line("c" + std::to_string(i), "function_call (pre)", "f", static_cast<int64_t>(i + 1), "\"args\":{},");
  std::ostringstream warnings;
  const RawTrace t = read(text, warnings);
  ASSERT_EQ(t.records.size(), n);
  const Record& late = t.records[n - 1];
  ASSERT_TRUE(late.shared_fields.is_object());
  EXPECT_TRUE(late.shared_fields.same_payload(t.records[n - 2].shared_fields));  // once time varies
  EXPECT_NE(std::find_if(late.fields.begin(), late.fields.end(), [](const Field& f) { return f.key == keys().time; }),
            late.fields.end());
  EXPECT_EQ(late.get("time")->as_int(), static_cast<int64_t>(n));
  EXPECT_EQ(late.get("func_call_id")->as_string(), "c" + std::to_string(n - 1));
  const Record& first = t.records[0];
  ASSERT_TRUE(first.shared_fields.is_object());
  EXPECT_EQ(first.get("function")->as_string(), "f");
  EXPECT_EQ(first.get("process_id")->as_int(), 7);
  EXPECT_EQ(first.get("func_call_id")->as_string(), "c0");  // unique to the call: its own
  std::vector<std::string> names;
  first.for_each_field([&](const Field& f) { names.push_back(std::string(key_name(f.key))); });
  EXPECT_EQ(names.size(), first.fields.size() + first.shared_fields.as_object().size());
  for (const std::string& n : names) EXPECT_NE(first.get(n), nullptr) << n;
  EXPECT_EQ(to_json(first.to_value()),
            "{\"args\":{},\"func_call_id\":\"c0\",\"function\":\"f\",\"is_bound_method\":false,\"meta_vars.stage\":\"training\","
            "\"meta_vars.step\":1,\"obj_id\":null,\"process_id\":7,\"thread_id\":1,\"time\":1,\"type\":\"function_call (pre)\"}");
  Record changed = first;
  changed.set(keys().function, Value::string("g"));
  EXPECT_EQ(changed.get("function")->as_string(), "g");
  size_t functions = 0;
  changed.for_each_field([&](const Field& f) { functions += f.key == keys().function; });
  EXPECT_EQ(functions, 1u);
  EXPECT_EQ(first.get("function")->as_string(), "f");  // the shared block is untouched
}

// Found by the trace_line fuzzer: a line giving meta_vars (so its stage) twice cached the second stage
// while its fields answered with the first. The first wins in both, as get() finds it.
TEST(TraceReader, AKeyGivenTwiceInALineHasOneValueInTheFieldsAndTheCachedNames) {
  const std::string text =
      "{\"func_call_id\":\"a\",\"thread_id\":1,\"process_id\":7,\"meta_vars\":{\"step\":1,\"stage\":\"training\"},"
      "\"type\":\"function_call (pre)\",\"meta_vars\":{\"step\":1,\"stage\":\"testing\"},\"function\":\"f\",\"time\":5}\n";
  std::ostringstream warnings;
  const RawTrace t = read(text, warnings);
  ASSERT_EQ(t.records.size(), 1u);
  const Record& r = t.records[0];
  const Value* stage = r.get(keys().meta_vars_stage);
  ASSERT_NE(stage, nullptr);
  EXPECT_EQ(r.stage, std::string_view(stage->as_string()));
}

// Bounded input: a name over 4096 bytes (whose copies per pair would grow inference's memory with its length) is
// cut at read time, with a hash of the whole name so that two long names stay apart, and said once.
TEST(TraceReader, ANameOverTheLimitIsCutWithAHashAndOneWarning) {
  const std::string long_a = "torch." + std::string(100000, 'a');
  const std::string long_b = "torch." + std::string(99999, 'a') + "b";
  std::string text = api_line("a", "function_call (pre)", long_a, 10) + api_line("a", "function_call (post)", long_a, 20) +
                     api_line("b", "function_call (pre)", long_b, 30) + api_line("c", "function_call (pre)", "torch.f", 40);
  std::ostringstream warnings;
  RawTrace t = read(text, warnings);
  ASSERT_EQ(t.records.size(), 4u);
  const std::string_view a = t.records[0].function.view(), b = t.records[2].function.view();
  EXPECT_LE(a.size(), 4096u);
  EXPECT_EQ(a.substr(0, 4000), long_a.substr(0, 4000));
  EXPECT_NE(a.find("...[cut: 100006 bytes, fnv "), std::string_view::npos) << a.substr(4000);
  EXPECT_EQ(t.records[1].function.view(), a);  // the same name cuts to the same name
  EXPECT_NE(a, b);
  EXPECT_EQ(t.records[0].get("function")->as_string(), a);  // the field too, not only the cached name
  EXPECT_EQ(t.records[3].function.view(), "torch.f");
  EXPECT_EQ(warnings.str(),
            "warning: mem.log: 3 records have a name longer than 4096 bytes, cut to that length, ending with a hash (the first: "
            "function at line 1)\n");
}
