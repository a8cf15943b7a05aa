#include "trace/trace_reader.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <optional>

#include "trace/json_parse.h"
#include "trace/parallel.h"

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

const std::shared_ptr<const std::string>& init_stage() {
  static const auto s = std::make_shared<const std::string>("init");
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
  // The original fills a missing or NaN stage with "init" (compat §4.5).
  const Value* stage = r.get(k.meta_vars_stage);
  if (stage == nullptr || stage->is_nan() || stage->is_null()) r.set(k.meta_vars_stage, Value::string(init_stage()));
  r.refresh_cached();
}

struct FileResult {
  std::vector<Record> records;
  uint64_t bytes = 0;
  size_t skipped = 0;
};

// Warnings printed per file before only a count is given: a file of garbage must not flood the terminal.
constexpr size_t kMaxLineWarnings = 5;

// A line that is not a valid record (torn by a full disk or a kill, or damaged) is skipped with a warning
// naming file, line and why, as the online checker does: one bad line never costs the whole trace. A
// file without a single valid record is not a trace: that is an error, with its first problem.
void parse_buffer(const std::string& name, uint32_t file_index, const std::string& buffer, size_t size,
                  JsonParser& parser, FileResult& result, std::ostream& warn, std::mutex& warn_mutex) {
  result.bytes = size;
  const char* data = buffer.data();
  std::vector<Field> fields;
  std::string error;
  std::optional<TraceReadError> first_problem;
  auto skip = [&](const TraceReadError& problem) {
    if (!first_problem) first_problem = problem;
    if (++result.skipped <= kMaxLineWarnings) {
      std::lock_guard lock(warn_mutex);
      warn << "warning: " << problem.what() << " (line skipped)\n";
    }
  };
  size_t pos = 0, line_no = 0;
  while (pos < size) {
    const void* nl = std::memchr(data + pos, '\n', size - pos);
    const size_t eol = nl ? static_cast<size_t>(static_cast<const char*>(nl) - data) : size;
    ++line_no;
    size_t b = pos, e = eol;
    while (b < e && (data[b] == ' ' || data[b] == '\t' || data[b] == '\r')) ++b;
    while (e > b && (data[e - 1] == ' ' || data[e - 1] == '\t' || data[e - 1] == '\r')) --e;
    pos = eol + 1;
    if (b == e) continue;
    if (!parser.parse_record_padded(data + b, e - b, fields, error)) {
      skip(TraceReadError(name, line_no, "", "invalid JSON: " + error));
      continue;
    }
    Record r;
    r.fields = std::move(fields);
    fields = {};
    r.file = file_index;
    r.line = static_cast<uint32_t>(line_no);
    try {
      validate(r, name, line_no);
    } catch (const TraceReadError& problem) {
      skip(problem);
      continue;
    }
    result.records.push_back(std::move(r));
  }
  if (result.records.empty() && first_problem) throw *first_problem;
  if (result.skipped > kMaxLineWarnings) {
    std::lock_guard lock(warn_mutex);
    warn << "warning: " << name << ": " << result.skipped << " lines skipped in all\n";
  }
}

RawTrace merge(std::vector<std::string> files, std::vector<FileResult>& results) {
  RawTrace out;
  out.files = std::move(files);
  size_t total = 0;
  for (auto& r : results) total += r.records.size();
  out.records.reserve(total);
  for (auto& r : results) {
    out.bytes += r.bytes;
    out.skipped_lines += r.skipped;
    std::move(r.records.begin(), r.records.end(), std::back_inserter(out.records));
  }
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
  std::ostream& warn = options.warnings ? *options.warnings : std::cerr;
  std::mutex warn_mutex;
  std::vector<FileResult> results(files.size());
  parallel_for(files.size(), options.threads, [&](size_t i) {
    thread_local JsonParser parser;
    std::string buffer, error;
    if (!read_file(files[i], buffer, error)) throw TraceReadError(files[i], 0, "", error);
    const size_t size = buffer.size();
    buffer.append(kJsonPadding, '\0');
    parse_buffer(files[i], static_cast<uint32_t>(i), buffer, size, parser, results[i], warn, warn_mutex);
  });
  return merge(files, results);
}

RawTrace read_trace_text(const std::string& name, const std::string& text, const ReadOptions& options) {
  std::ostream& warn = options.warnings ? *options.warnings : std::cerr;
  std::mutex warn_mutex;
  std::vector<FileResult> results(1);
  JsonParser parser;
  std::string buffer = text;
  buffer.append(kJsonPadding, '\0');
  parse_buffer(name, 0, buffer, text.size(), parser, results[0], warn, warn_mutex);
  return merge({name}, results);
}

}  // namespace traincheck
