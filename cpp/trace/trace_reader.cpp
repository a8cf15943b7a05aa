#include "trace/trace_reader.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <condition_variable>
#include <iostream>
#include <mutex>
#include <new>
#include <span>

#include "common/console_text.h"
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

// A name this long is not a real API or variable name but an accident or an attack: a 50 MB function
// name made infer use 17 GB (every invariant over it copies it). Cut at read time, with a hash of the
// whole name so that different long names stay different.
constexpr size_t kMaxNameBytes = 4096;

std::string cut_name(const std::string& name) {
  uint64_t hash = 1469598103934665603ULL;  // FNV-1a of the whole name
  for (unsigned char c : name) hash = (hash ^ c) * 1099511628211ULL;
  char tail[64];
  const int tail_size =
      std::snprintf(tail, sizeof tail, "...[cut: %zu bytes, fnv %016llx]", name.size(), static_cast<unsigned long long>(hash));
  size_t keep = kMaxNameBytes - static_cast<size_t>(tail_size);  // the cut name is kMaxNameBytes at most
  while (keep > 0 && (static_cast<unsigned char>(name[keep]) & 0xC0) == 0x80) --keep;  // a UTF-8 boundary
  return name.substr(0, keep) + tail;
}

// Cuts the record's names over kMaxNameBytes; returns how many, and the first one's field in `field`.
size_t cut_long_names(Record& r, const Record::KnownFields& known, std::string& field) {
  const WellKnownKeys& k = keys();
  const std::pair<const Value*, KeyId> names[] = {
      {known.function, k.function}, {known.var_name, k.var_name}, {known.var_type, k.var_type}, {known.stage, k.meta_vars_stage}};
  std::vector<std::pair<KeyId, std::string>> cut;
  for (const auto& [value, key] : names) {
    if (value == nullptr || !value->is_string() || value->as_string().size() <= kMaxNameBytes) continue;
    if (cut.empty()) field = std::string(key_name(key));
    cut.emplace_back(key, cut_name(value->as_string()));
  }
  // Set only now: each set() moves the fields, and `known` points into them.
  for (auto& [key, name] : cut) r.set(key, Value::string(std::move(name)));
  return cut.size();
}

// Checks the fields an index relies on and fills the typed members. Throws on a missing field. Names
// over kMaxNameBytes are cut (counted in `names_cut`, the first one's field in `cut_field`).
void validate(Record& r, const std::string& file, size_t line, size_t* names_cut = nullptr, std::string* cut_field = nullptr) {
  const Record::KnownFields known = r.known_fields();
  const Value* type = known.type;
  if (type == nullptr || !type->is_string()) throw TraceReadError(file, line, "type", "missing or not a string");
  auto parsed = parse_record_type(type->as_string());
  if (!parsed) throw TraceReadError(file, line, "type", "unknown record type '" + type->as_string() + "'");
  r.type = *parsed;
  auto require_number = [&](const Value* v, std::string_view name) {
    if (v == nullptr || !v->is_number() || v->is_nan()) throw TraceReadError(file, line, std::string(name), "missing or not a number");
  };
  auto require_string = [&](const Value* v, std::string_view name) {
    if (v == nullptr || !v->is_string()) throw TraceReadError(file, line, std::string(name), "missing or not a string");
  };
  require_number(known.process_id, "process_id");
  require_number(known.thread_id, "thread_id");
  require_number(known.time, "time");
  if (r.type == RecordType::StateChange) {
    require_string(known.var_name, "var_name");
    require_string(known.var_type, "var_type");
  } else {
    require_string(known.function, "function");
    require_string(known.func_call_id, "func_call_id");
  }
  std::string field;
  if (const size_t cut = cut_long_names(r, known, field)) {
    if (names_cut != nullptr && (*names_cut)++ == 0 && cut_field != nullptr) *cut_field = field + " at line " + std::to_string(line);
    r.refresh_cached();
    validate(r, file, line);  // again, on the cut fields (none is long now)
    return;
  }
  // The original fills a missing or NaN stage with "init" (docs/collection.md §Meta-vars and sampling).
  const Value* stage = known.stage;
  if (stage == nullptr || stage->is_nan() || stage->is_null()) {
    r.set(keys().meta_vars_stage, init_stage());
    r.refresh_cached();  // the insertion moved the fields
    return;
  }
  if (!stage->is_string()) throw TraceReadError(file, line, "meta_vars.stage", "not a string");  // every index groups by it
  r.refresh_cached(known);
}

// A file is read in pieces: byte ranges that start at a line start, each parsed by one worker straight
// into its own slice of the trace's record array (sized by a line count taken first), so the records are
// never held twice, as merging per-file arrays would, and one large file keeps every worker busy (the
// collector's state file is often most of a trace). Records beyond a slice (the file grew after it was
// counted) wait in `overflow`.
constexpr uint64_t kToEnd = UINT64_MAX;

struct Piece {
  uint32_t file = 0;
  uint64_t begin = 0;
  uint64_t end = kToEnd;  // exclusive, just after a newline; kToEnd: to the end of the file, however long
  size_t lines = 0;       // lines counted in [begin, end): the slice's slots
  size_t first_line = 1;  // the 1-based number of the line at `begin`

  std::span<Record> slots;
  size_t placed = 0;
  std::vector<Record> overflow;
  uint64_t bytes = 0;
  size_t skipped = 0;
  std::vector<uint64_t> skipped_at;      // every skipped line's number, in order
  std::vector<TraceReadError> problems;  // the first few, in line order
  size_t names_cut = 0;                  // records whose names were over kMaxNameBytes
  std::string first_cut;                 // the first one's field and line

  size_t count() const { return placed + overflow.size(); }
  void add(Record&& r) {
    if (placed < slots.size()) slots[placed++] = std::move(r);
    else overflow.push_back(std::move(r));
  }
};

// Warnings printed per file before only a count is given: a file of garbage must not flood the terminal.
constexpr size_t kMaxLineWarnings = 5;

// A line that is not a valid record (torn by a full disk or a kill, or damaged) is skipped; its problem
// is kept for the file's warnings (report_file).
class PieceParser {
 public:
  PieceParser(const std::string& name, JsonParser& parser, SharedFieldBlocks& shared_blocks, Piece& piece)
      : name_(name), parser_(parser), shared_blocks_(shared_blocks), piece_(piece), line_no_(piece.first_line - 1) {}

  // Parses the lines of data[0, size): every line ends with '\n' except perhaps the file's last.
  // `data` has kJsonPadding readable bytes after `size`.
  void feed(const char* data, size_t size) {
    piece_.bytes += size;
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

 private:
  void skip(TraceReadError problem) {
    piece_.skipped_at.push_back(line_no_);
    if (++piece_.skipped <= kMaxLineWarnings) piece_.problems.push_back(std::move(problem));
  }

  void parse_line(const char* data, size_t len) {
    if (!parser_.parse_record_padded(data, len, fields_, error_)) {
      skip(TraceReadError(name_, line_no_, "", "invalid JSON: " + error_));
      return;
    }
    Record r;
    r.fields.swap(fields_);  // validated in the parse buffer, then split into exact-size own fields
    r.file = piece_.file;
    r.line = static_cast<uint32_t>(line_no_);
    try {
      validate(r, name_, line_no_, &piece_.names_cut, &piece_.first_cut);
    } catch (const TraceReadError& problem) {
      skip(problem);
      return;
    }
    fields_ = shared_blocks_.split(r);
    piece_.add(std::move(r));
  }

  const std::string& name_;
  JsonParser& parser_;
  SharedFieldBlocks& shared_blocks_;  // one table per piece
  Piece& piece_;
  std::vector<Field> fields_;  // reused: its capacity is the largest record's
  std::string error_;
  size_t line_no_;
};

// One file's verdict from its pieces (in order): the first problems as warnings, a count past them, and
// an error, with its first problem, for a file without a single valid record: that is not a trace.
void report_file(const std::string& name, std::span<const Piece> pieces, std::ostream& warn) {
  size_t records = 0, skipped = 0, warned = 0;
  for (const Piece& p : pieces) {
    records += p.count();
    skipped += p.skipped;
    for (const TraceReadError& problem : p.problems)
      if (warned++ < kMaxLineWarnings) warn << "warning: " << console_text(problem.what(), 1000) << " (line skipped)\n";
  }
  if (records == 0 && skipped > 0)
    for (const Piece& p : pieces)
      if (!p.problems.empty()) throw p.problems.front();
  if (skipped > kMaxLineWarnings) warn << "warning: " << name << ": " << skipped << " lines skipped in all\n";
  size_t cut = 0;
  const Piece* first = nullptr;
  for (const Piece& p : pieces) {
    if (p.names_cut && first == nullptr) first = &p;
    cut += p.names_cut;
  }
  if (cut)
    warn << "warning: " << name << ": " << cut << (cut == 1 ? " record has" : " records have") << " a name longer than "
         << kMaxNameBytes << " bytes, cut to that length, ending with a hash (the first: " << first->first_cut << ")\n";
}

// Files are read this much at a time, so a reader holds one block of text, never a whole file.
constexpr size_t kReadBlockBytes = size_t{1} << 20;

// A read block's memory, mapped directly so that it goes back to the system when freed: from malloc,
// each freed block raised glibc's mmap threshold and the next blocks stayed in the heap, 8 MiB of
// unused memory per block read per worker for the rest of the run (bench/memory_bench).
class ReadBuffer {
 public:
  ReadBuffer() = default;
  ReadBuffer(const ReadBuffer&) = delete;
  ReadBuffer& operator=(const ReadBuffer&) = delete;
  ~ReadBuffer() { unmap(); }

  char* data() { return data_; }
  size_t size() const { return size_; }
  // Makes room for `n` bytes, keeping the first size() ones.
  void grow(size_t n) {
    if (n <= size_) return;
    void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    if (size_ > 0) std::memcpy(p, data_, size_);
    unmap();
    data_ = static_cast<char*>(p);
    size_ = n;
  }

 private:
  void unmap() {
    if (data_ != nullptr) munmap(data_, size_);
  }
  char* data_ = nullptr;
  size_t size_ = 0;
};

void read_piece(const std::string& path, JsonParser& parser, SharedFieldBlocks& shared_blocks, Piece& piece) {
  std::ifstream in;
  std::string error;
  if (!open_plain_file(path, in, error)) throw TraceReadError(path, 0, "", error);
  if (piece.begin > 0) in.seekg(static_cast<std::streamoff>(piece.begin));
  uint64_t left = piece.end == kToEnd ? kToEnd : piece.end - piece.begin;
  PieceParser lines(path, parser, shared_blocks, piece);
  ReadBuffer buffer;  // a partial line carried over, then the block read, then the padding
  size_t carried = 0;
  for (;;) {
    buffer.grow(carried + kReadBlockBytes + kJsonPadding);  // more only when a line outgrows a block
    const size_t want = static_cast<size_t>(std::min<uint64_t>(kReadBlockBytes, left));
    if (want > 0) in.read(buffer.data() + carried, static_cast<std::streamsize>(want));
    const size_t got = want > 0 ? static_cast<size_t>(in.gcount()) : 0;
    left -= got;
    const size_t size = carried + got;
    if (got == 0) {  // end of the piece or of the file: what was carried is its last line (no newline)
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
}

// Counts a file's lines (newlines, plus an unterminated last line: an upper bound on its records) and
// cuts it into pieces of about `piece_bytes` at line starts. A file that cannot be opened or read is one
// piece of 0 lines here; parsing it reports the error.
std::vector<Piece> plan_pieces(const std::string& path, uint32_t file, uint64_t piece_bytes) {
  std::vector<Piece> pieces(1);
  pieces[0].file = file;
  std::ifstream in;
  std::string error;
  if (!open_plain_file(path, in, error)) return pieces;
  ReadBuffer buffer;
  buffer.grow(kReadBlockBytes);
  char* const block = buffer.data();
  uint64_t offset = 0;  // of the block in the file
  size_t lines = 0;     // in the file so far
  char last = '\n';
  for (;;) {
    in.read(block, static_cast<std::streamsize>(kReadBlockBytes));
    const size_t got = static_cast<size_t>(in.gcount());
    if (got == 0) break;
    // Line by line with memchr (vectorised): std::count went byte by byte.
    const char* end = block + got;
    for (const char* p = block; (p = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p)))) != nullptr; ++p) {
      ++lines;
      const uint64_t after = offset + static_cast<uint64_t>(p - block) + 1;
      Piece& current = pieces.back();
      if (after - current.begin < piece_bytes) continue;
      current.end = after;
      current.lines = lines - (current.first_line - 1);
      Piece next;
      next.file = file;
      next.begin = after;
      next.first_line = lines + 1;
      pieces.push_back(std::move(next));
    }
    offset += got;
    last = block[got - 1];
  }
  Piece& tail = pieces.back();
  tail.lines = lines + (last != '\n' ? 1 : 0) - (tail.first_line - 1);
  return pieces;
}

// Gives each piece its slice of `records` (one slot per counted line).
void assign_slices(std::vector<Record>& records, std::vector<Piece>& pieces) {
  size_t total = 0;
  for (const Piece& p : pieces) total += p.lines;
  records.resize(total);
  size_t offset = 0;
  for (Piece& p : pieces) {
    p.slots = std::span<Record>(records.data() + offset, p.lines);
    offset += p.lines;
  }
}

// Closes the gaps the slices left (blank, skipped or torn lines) in place, piece after piece, keeping
// file order and line order; only a file that outgrew its slice makes a second array.
RawTrace assemble(std::vector<std::string> files, std::vector<Record> records, std::vector<Piece>& pieces) {
  RawTrace out;
  out.files = std::move(files);
  bool overflowed = false;
  for (const Piece& p : pieces) {
    out.bytes += p.bytes;
    out.skipped_lines += p.skipped;
    for (uint64_t line : p.skipped_at) out.lost.push_back(LostRecords{p.file, line, 1, true});
    overflowed = overflowed || !p.overflow.empty();
  }
  if (overflowed) {
    size_t total = 0;
    for (const Piece& p : pieces) total += p.count();
    out.records.reserve(total);
    for (Piece& p : pieces) {
      for (size_t j = 0; j < p.placed; ++j) out.records.push_back(std::move(p.slots[j]));
      for (Record& extra : p.overflow) out.records.push_back(std::move(extra));
      std::vector<Record>().swap(p.overflow);
    }
    return out;
  }
  size_t write = 0;
  for (const Piece& p : pieces) {
    Record* from = p.slots.data();
    for (size_t j = 0; j < p.placed; ++j, ++write)
      if (&records[write] != from + j) records[write] = std::move(from[j]);
  }
  records.resize(write);
  out.records = std::move(records);
  return out;
}

// Parses the planned pieces of `files` in parallel, then reports each file and assembles the trace.
RawTrace read_pieces(const std::vector<std::string>& files, std::vector<Piece> pieces, const ReadOptions& options) {
  std::ostream& warn = options.warnings ? *options.warnings : std::cerr;
  std::vector<Record> records;
  assign_slices(records, pieces);
  // A file's later pieces start from the keys its first piece found to vary too much to share: each
  // piece learning them anew filled its first thousands of records' blocks with times and steps (a MiB a
  // piece). First pieces are handed out first, so a piece never waits for one that no worker holds.
  struct FileLearning {
    std::mutex mutex;
    std::condition_variable learnt;
    bool done = false;
    std::vector<KeyId> varying;
  };
  std::vector<FileLearning> learning(files.size());
  auto is_first = [&](size_t i) { return i == 0 || pieces[i - 1].file != pieces[i].file; };
  std::vector<size_t> order;
  for (size_t i = 0; i < pieces.size(); ++i)
    if (is_first(i)) order.push_back(i);
  for (size_t i = 0; i < pieces.size(); ++i)
    if (!is_first(i)) order.push_back(i);
  parallel_for(order.size(), options.threads, [&](size_t n) {
    thread_local JsonParser parser;
    const size_t i = order[n];
    FileLearning& file = learning[pieces[i].file];
    SharedFieldBlocks shared_blocks;
    if (!is_first(i)) {
      std::unique_lock lock(file.mutex);
      file.learnt.wait(lock, [&] { return file.done; });
      shared_blocks.assume_varying(file.varying);
    }
    auto publish = [&] {  // also when the first piece fails, so that no piece waits forever
      std::lock_guard lock(file.mutex);
      file.varying = shared_blocks.varying_keys();
      file.done = true;
      file.learnt.notify_all();
    };
    try {
      read_piece(files[pieces[i].file], parser, shared_blocks, pieces[i]);
    } catch (...) {
      if (is_first(i)) publish();
      throw;
    }
    if (is_first(i)) publish();
  });
  for (size_t lo = 0; lo < pieces.size();) {
    size_t hi = lo;
    while (hi < pieces.size() && pieces[hi].file == pieces[lo].file) ++hi;
    report_file(files[pieces[lo].file], std::span<const Piece>(pieces.data() + lo, hi - lo), warn);
    lo = hi;
  }
  return assemble(files, std::move(records), pieces);
}

}  // namespace

bool parse_trace_line(JsonParser& parser, const char* data, size_t len, Record& out, std::string& error) {
  out = Record();
  if (!parser.parse_record_padded(data, len, out.fields, error)) {
    error = "invalid JSON: " + error;
    return false;
  }
  return validate_trace_record(out, error);
}

bool validate_trace_record(Record& record, std::string& error) {
  try {
    validate(record, "", 0);
  } catch (const TraceReadError& e) {
    error = e.what();  // ": field 'x': what" (no file or line here)
    if (error.starts_with(": ")) error.erase(0, 2);
    return false;
  }
  return true;
}

RawTrace read_trace_files(const std::vector<std::string>& files, const ReadOptions& options) {
  std::vector<std::vector<Piece>> planned(files.size());
  parallel_for(files.size(), options.threads, [&](size_t i) { planned[i] = plan_pieces(files[i], static_cast<uint32_t>(i), options.piece_bytes); });
  std::vector<Piece> pieces;
  for (std::vector<Piece>& file_pieces : planned)
    for (Piece& p : file_pieces) pieces.push_back(std::move(p));
  return read_pieces(files, std::move(pieces), options);
}

RawTrace read_trace_files_counted(const std::vector<std::string>& files, const std::vector<size_t>& lines,
                                  const ReadOptions& options) {
  std::vector<Piece> pieces(files.size());
  for (size_t i = 0; i < files.size(); ++i) {
    pieces[i].file = static_cast<uint32_t>(i);
    pieces[i].lines = lines[i];
  }
  return read_pieces(files, std::move(pieces), options);
}

RawTrace read_trace_text(const std::string& name, const std::string& text, const ReadOptions& options) {
  std::ostream& warn = options.warnings ? *options.warnings : std::cerr;
  std::vector<Piece> pieces(1);
  pieces[0].lines = static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) + (!text.empty() && text.back() != '\n' ? 1 : 0);
  std::vector<Record> records;
  assign_slices(records, pieces);
  JsonParser parser;
  SharedFieldBlocks shared_blocks;
  std::string buffer = text;
  buffer.append(kJsonPadding, '\0');
  PieceParser lines(name, parser, shared_blocks, pieces[0]);
  lines.feed(buffer.data(), text.size());
  report_file(name, pieces, warn);
  return assemble({name}, std::move(records), pieces);
}

}  // namespace traincheck
