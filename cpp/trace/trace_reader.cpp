#include "trace/trace_reader.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <iostream>
#include <mutex>
#include <optional>
#include <span>

#include "common/parallel.h"
#include "trace/json_parse.h"
#include "trace/shared_fields.h"

namespace traincheck {

namespace fs = std::filesystem;

static std::string error_message(const std::string& file, size_t line, const std::string& field, const std::string& what) {
  std::string m = file;
  if (line) m.append(":").append(std::to_string(line));
  if (!field.empty()) m.append(": field '").append(field).append("'");
  // A message quotes at most about 200 characters of the offending text: a damaged megabyte-long line
  // must not be printed whole.
  constexpr size_t kMaxQuoted = 200;
  if (what.size() > kMaxQuoted) m.append(": ").append(what, 0, kMaxQuoted).append("... (" + std::to_string(what.size()) + " characters)");
  else m.append(": ").append(what);
  return m;
}

TraceReadError::TraceReadError(const std::string& file, size_t line, const std::string& field,
                               const std::string& what)
    : std::runtime_error(error_message(file, line, field, what)),
      file_(file),
      line_(line),
      field_(field) {}

std::vector<std::string> list_trace_files(const std::string& folder) {
  std::error_code ec;
  std::vector<std::string> out;
  fs::directory_iterator it(folder, ec);
  if (ec) throw TraceReadError(folder, 0, "", "cannot list trace folder: " + ec.message());
  for (const auto& entry : it) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with("trace_") && name != "proxy_log.json") continue;
    // Named like a trace file but not a plain one (a folder, a FIFO, a link to a device): an error, never
    // skipped in silence (the analysis would miss that file's records) nor read (a FIFO or a device never ends).
    std::error_code kind_ec;
    if (!entry.is_regular_file(kind_ec))
      throw TraceReadError(entry.path().string(), 0, "", entry.is_directory(kind_ec) ? "named like a trace file but is a folder"
                                                                                      : "named like a trace file but is not a plain file (a FIFO, socket or device)");
    out.push_back(entry.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

const Value& init_stage() {
  static const Value s = Value::string("init");
  return s;
}

// Checks the fields an index relies on and fills the typed members. Throws on a missing field.
void validate(Record& r, const std::string& file, size_t line) {
  const WellKnownKeys& k = keys();
  const Value* type = r.get(k.type);
  if (type == nullptr || !type->is_string()) throw TraceReadError(file, line, "type", "missing or not a string");
  auto parsed = parse_record_type(type->as_string());
  if (!parsed) throw TraceReadError(file, line, "type", "unknown record type '" + type->as_string() + "'");
  r.type = *parsed;
  auto require_number = [&](KeyId key) {
    const Value* v = r.get(key);
    if (v == nullptr || !v->is_number() || v->is_nan())
      throw TraceReadError(file, line, std::string(key_name(key)), "missing or not a number");
  };
  auto require_string = [&](KeyId key) {
    const Value* v = r.get(key);
    if (v == nullptr || !v->is_string())
      throw TraceReadError(file, line, std::string(key_name(key)), "missing or not a string");
  };
  require_number(k.process_id);
  require_number(k.thread_id);
  require_number(k.time);
  if (r.type == RecordType::StateChange) {
    require_string(k.var_name);
    require_string(k.var_type);
  } else {
    require_string(k.function);
    require_string(k.func_call_id);
  }
  // The original fills a missing or NaN stage with "init" (docs/collection.md §Meta-vars and sampling).
  const Value* stage = r.get(k.meta_vars_stage);
  if (stage == nullptr || stage->is_nan() || stage->is_null()) {
    r.set(k.meta_vars_stage, init_stage());
  } else if (!stage->is_string()) {
    throw TraceReadError(file, line, "meta_vars.stage", "not a string");  // every index groups by it
  }
  r.refresh_cached();
}

// One file's records go straight into their slice of the trace's record array (sized by a line count
// taken first), so the records are never held twice, as merging per-file arrays would. Records beyond
// the slice (the file grew after it was counted) wait in `overflow`.
struct FileResult {
  std::span<Record> slots;
  size_t placed = 0;
  std::vector<Record> overflow;
  uint64_t bytes = 0;
  size_t skipped = 0;

  size_t count() const { return placed + overflow.size(); }
  void add(Record&& r) {
    if (placed < slots.size()) slots[placed++] = std::move(r);
    else overflow.push_back(std::move(r));
  }
};

// Warnings printed per file before only a count is given: a file of garbage must not flood the terminal.
constexpr size_t kMaxLineWarnings = 5;

// A line that is not a valid record (torn by a full disk or a kill, or damaged) is skipped with a warning
// naming file, line and why, as the online checker does: one bad line never costs the whole trace. A
// file without a single valid record is not a trace: that is an error, with its first problem.
class FileParser {
 public:
  FileParser(const std::string& name, uint32_t file_index, JsonParser& parser, FileResult& result, std::ostream& warn,
             std::mutex& warn_mutex)
      : name_(name), file_index_(file_index), parser_(parser), result_(result), warn_(warn), warn_mutex_(warn_mutex) {}

  // Parses the lines of data[0, size): every line ends with '\n' except perhaps the file's last.
  // `data` has kJsonPadding readable bytes after `size`.
  void feed(const char* data, size_t size) {
    result_.bytes += size;
    size_t pos = 0;
    while (pos < size) {
      const void* nl = std::memchr(data + pos, '\n', size - pos);
      const size_t eol = nl ? static_cast<size_t>(static_cast<const char*>(nl) - data) : size;
      ++line_no_;
      size_t b = pos, e = eol;
      while (b < e && (data[b] == ' ' || data[b] == '\t' || data[b] == '\r')) ++b;
      while (e > b && (data[e - 1] == ' ' || data[e - 1] == '\t' || data[e - 1] == '\r')) --e;
      pos = eol + 1;
      if (b != e) parse_line(data + b, e - b);
    }
  }

  void finish() {
    if (result_.count() == 0 && first_problem_) throw *first_problem_;
    if (result_.skipped > kMaxLineWarnings) {
      std::lock_guard lock(warn_mutex_);
      warn_ << "warning: " << name_ << ": " << result_.skipped << " lines skipped in all\n";
    }
  }

 private:
  void skip(const TraceReadError& problem) {
    if (!first_problem_) first_problem_ = problem;
    if (++result_.skipped <= kMaxLineWarnings) {
      std::lock_guard lock(warn_mutex_);
      warn_ << "warning: " << problem.what() << " (line skipped)\n";
    }
  }

  void parse_line(const char* data, size_t len) {
    if (!parser_.parse_record_padded(data, len, fields_, error_)) {
      skip(TraceReadError(name_, line_no_, "", "invalid JSON: " + error_));
      return;
    }
    Record r;
    r.fields.swap(fields_);  // validated in the parse buffer, then split into exact-size own fields
    r.file = file_index_;
    r.line = static_cast<uint32_t>(line_no_);
    try {
      validate(r, name_, line_no_);
    } catch (const TraceReadError& problem) {
      skip(problem);
      return;
    }
    fields_ = shared_blocks_.split(r);
    result_.add(std::move(r));
  }

  const std::string& name_;
  uint32_t file_index_;
  JsonParser& parser_;
  FileResult& result_;
  std::ostream& warn_;
  std::mutex& warn_mutex_;
  std::vector<Field> fields_;  // reused: its capacity is the largest record's
  SharedFieldBlocks shared_blocks_;  // one table per file
  std::string error_;
  std::optional<TraceReadError> first_problem_;
  size_t line_no_ = 0;
};

// Files are read this much at a time, so a reader holds one block of text, never a whole file.
constexpr size_t kReadBlockBytes = size_t{8} << 20;

void read_one_file(const std::string& path, uint32_t file_index, JsonParser& parser, FileResult& result, std::ostream& warn,
                   std::mutex& warn_mutex) {
  std::ifstream in;
  std::string error;
  if (!open_plain_file(path, in, error)) throw TraceReadError(path, 0, "", error);
  FileParser lines(path, file_index, parser, result, warn, warn_mutex);
  std::string buffer;  // a partial line carried over, then the block read, then the padding
  size_t carried = 0;
  for (;;) {
    buffer.resize(carried + kReadBlockBytes + kJsonPadding);
    in.read(buffer.data() + carried, static_cast<std::streamsize>(kReadBlockBytes));
    const size_t got = static_cast<size_t>(in.gcount());
    const size_t size = carried + got;
    if (got == 0) {  // end of file: what was carried is the last line (no newline)
      if (in.bad()) throw TraceReadError(path, 0, "", "cannot read file");
      std::memset(buffer.data() + size, 0, kJsonPadding);
      lines.feed(buffer.data(), size);
      break;
    }
    const void* last_nl = memrchr(buffer.data(), '\n', size);
    const size_t complete = last_nl ? static_cast<size_t>(static_cast<const char*>(last_nl) - buffer.data()) + 1 : 0;
    if (complete > 0) {
      // The padding after the complete lines is the next line's first bytes: readable, which is all
      // simdjson needs (it never reads past the length it is given for a meaningful byte).
      lines.feed(buffer.data(), complete);
      std::memmove(buffer.data(), buffer.data() + complete, size - complete);
    }
    carried = size - complete;
  }
  lines.finish();
}

// Lines a file may hold (newlines, plus an unterminated last line): an upper bound on its records. A
// file that cannot be opened or read counts 0 here; parsing it reports the error.
size_t count_lines(const std::string& path) {
  std::ifstream in;
  std::string error;
  if (!open_plain_file(path, in, error)) return 0;
  std::string block(kReadBlockBytes, '\0');
  size_t lines = 0;
  char last = '\n';
  for (;;) {
    in.read(block.data(), static_cast<std::streamsize>(block.size()));
    const size_t got = static_cast<size_t>(in.gcount());
    if (got == 0) break;
    lines += static_cast<size_t>(std::count(block.data(), block.data() + got, '\n'));
    last = block[got - 1];
  }
  return lines + (last != '\n' ? 1 : 0);
}

// Gives each file its slice of `records` (one slot per counted line).
void assign_slices(std::vector<Record>& records, const std::vector<size_t>& lines, std::vector<FileResult>& results) {
  size_t total = 0;
  for (size_t n : lines) total += n;
  records.resize(total);
  size_t offset = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    results[i].slots = std::span<Record>(records.data() + offset, lines[i]);
    offset += lines[i];
  }
}

// Closes the gaps the slices left (blank, skipped or torn lines) in place, file after file, keeping
// file order and line order; only a file that outgrew its slice makes a second array.
RawTrace assemble(std::vector<std::string> files, std::vector<Record> records, std::vector<FileResult>& results) {
  RawTrace out;
  out.files = std::move(files);
  bool overflowed = false;
  for (const FileResult& r : results) {
    out.bytes += r.bytes;
    out.skipped_lines += r.skipped;
    overflowed = overflowed || !r.overflow.empty();
  }
  if (overflowed) {
    size_t total = 0;
    for (const FileResult& r : results) total += r.count();
    out.records.reserve(total);
    for (FileResult& r : results) {
      for (size_t j = 0; j < r.placed; ++j) out.records.push_back(std::move(r.slots[j]));
      for (Record& extra : r.overflow) out.records.push_back(std::move(extra));
      std::vector<Record>().swap(r.overflow);
    }
    return out;
  }
  size_t write = 0;
  for (const FileResult& r : results) {
    Record* from = r.slots.data();
    for (size_t j = 0; j < r.placed; ++j, ++write)
      if (&records[write] != from + j) records[write] = std::move(from[j]);
  }
  records.resize(write);
  out.records = std::move(records);
  return out;
}

}  // namespace

bool parse_trace_line(JsonParser& parser, const char* data, size_t len, Record& out, std::string& error) {
  out = Record();
  if (!parser.parse_record_padded(data, len, out.fields, error)) {
    error = "invalid JSON: " + error;
    return false;
  }
  try {
    validate(out, "", 0);
  } catch (const TraceReadError& e) {
    error = e.what();  // ": field 'x': what" (no file or line here)
    if (error.starts_with(": ")) error.erase(0, 2);
    return false;
  }
  return true;
}

RawTrace read_trace_files(const std::vector<std::string>& files, const ReadOptions& options) {
  std::vector<size_t> lines(files.size());
  parallel_for(files.size(), options.threads, [&](size_t i) { lines[i] = count_lines(files[i]); });
  return read_trace_files_counted(files, lines, options);
}

RawTrace read_trace_files_counted(const std::vector<std::string>& files, const std::vector<size_t>& lines,
                                  const ReadOptions& options) {
  std::ostream& warn = options.warnings ? *options.warnings : std::cerr;
  std::mutex warn_mutex;
  std::vector<Record> records;
  std::vector<FileResult> results(files.size());
  assign_slices(records, lines, results);
  parallel_for(files.size(), options.threads, [&](size_t i) {
    thread_local JsonParser parser;
    read_one_file(files[i], static_cast<uint32_t>(i), parser, results[i], warn, warn_mutex);
  });
  return assemble(files, std::move(records), results);
}

RawTrace read_trace_text(const std::string& name, const std::string& text, const ReadOptions& options) {
  std::ostream& warn = options.warnings ? *options.warnings : std::cerr;
  std::mutex warn_mutex;
  const size_t line_count = static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) +
                            (!text.empty() && text.back() != '\n' ? 1 : 0);
  std::vector<Record> records;
  std::vector<FileResult> results(1);
  assign_slices(records, {line_count}, results);
  JsonParser parser;
  std::string buffer = text;
  buffer.append(kJsonPadding, '\0');
  FileParser lines(name, 0, parser, results[0], warn, warn_mutex);
  lines.feed(buffer.data(), text.size());
  lines.finish();
  return assemble({name}, std::move(records), results);
}

}  // namespace traincheck
