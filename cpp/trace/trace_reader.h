// Reading trace files (docs/formats.md §Trace records) into records.
//
// A trace is either a folder (every file whose name starts with "trace_", plus "proxy_log.json") or an
// explicit list of files combined into one trace (-t). Files are parsed in parallel, one simdjson
// parser per worker, a large file in pieces of about 32 MiB (cut at line starts) so that one file never
// leaves the other workers idle.
//
// Damage policy (docs/formats.md §Damaged and incomplete traces): a malformed line (a writer killed
// mid-line, a full disk) or a record missing a required field is skipped with a warning naming the file,
// the line and the field (the first five per file, then a count), and its place is kept as lost records
// (RawTrace::lost) for the checks to leave out what it touches; a file without a single valid record is an
// error with its first problem.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <stdexcept>
#include <string>
#include <vector>

#include "trace/record.h"

namespace traincheck {

class TraceReadError : public std::runtime_error {
 public:
  TraceReadError(const std::string& file, size_t line, const std::string& field, const std::string& what);
  const std::string& file() const { return file_; }
  size_t line() const { return line_; }
  const std::string& field() const { return field_; }

 private:
  std::string file_;
  size_t line_;
  std::string field_;
};

struct ReadOptions {
  std::ostream* warnings = nullptr;  // nullptr: std::cerr
  size_t threads = 0;                // 0: one per hardware thread
  uint64_t piece_bytes = uint64_t{32} << 20;  // a file is parsed in pieces of about this size
};

// Records of one trace file that the trace lacks, at one place: a damaged line the reader skipped, or
// lines the recorder could not write (trace/recorder_log.h).
struct LostRecords {
  uint32_t file = 0;     // RawTrace::files index
  uint64_t line = 0;     // 1-based: the damaged line, or the line the lost ones would have come before
  uint64_t records = 1;  // how many
  bool placed = true;    // false: lost somewhere in the file, where is unknown (`line` is 0)
};

struct RawTrace {
  std::vector<std::string> files;  // Record::file indexes this
  std::vector<Record> records;     // file order, then line order
  uint64_t bytes = 0;
  size_t skipped_lines = 0;        // damaged lines that were dropped
  std::vector<LostRecords> lost;   // file order, then line order
};

// The trace files of a folder, sorted by name. Throws TraceReadError if the folder cannot be listed.
std::vector<std::string> list_trace_files(const std::string& folder);

// Reads the given files as one trace. Throws TraceReadError.
RawTrace read_trace_files(const std::vector<std::string>& files, const ReadOptions& options = {});

// read_trace_files once the files' lines are counted (`lines[i]` for files[i]), each file read whole as
// one piece: its records go into a slice of that many slots of one array. A file that has grown since it
// was counted still reads whole. Exposed for tests of that case.
RawTrace read_trace_files_counted(const std::vector<std::string>& files, const std::vector<size_t>& lines,
                                  const ReadOptions& options = {});

// Parses trace lines from memory (used by tests and the online reader): `name` stands for the file.
RawTrace read_trace_text(const std::string& name, const std::string& text, const ReadOptions& options = {});

// Parses one trace line (leading/trailing blanks allowed) into `out` under the reader's rules (required
// fields, stage default). `data` must have kJsonPadding readable bytes after `len` (json_parse.h).
// Returns false with `error` set ("invalid JSON: ..." or "field 'x': ...") on a bad line; used by the
// online checker, which must not throw per line.
class JsonParser;
bool parse_trace_line(JsonParser& parser, const char* data, size_t len, Record& out, std::string& error);
// The same rules on a record whose sorted fields were read from another encoding
// (trace/record_frames.h): fills its typed members; false with `error` ("field 'x': ...").
bool validate_trace_record(Record& record, std::string& error);

}  // namespace traincheck
