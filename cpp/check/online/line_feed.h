// The online checker's line feed: trace text in, records out in relation.h's delivery order.
//
// add_lines() takes complete JSON lines of one source (a trace file). A line whose raw "function" /
// "var_type" value names nothing wanted is skipped before parsing (parsing is most of a record's cost, and
// most records of a run are of APIs no invariant names); the others are parsed with the trace reader's
// line parser (same rules and messages) and, if wanted, kept until end_batch(), which hands them over in
// time order (stable: each source keeps its order). A state line of a variable whose earlier line of
// the same source was kept is built from that line's template when it matches (var_line_templates.h),
// not parsed: the same record. A batch is one pass over every stream (a recorder
// writer pass, a poll of traincheck-onlinecheck), so records of different files are merged by time within
// it. A bad line is counted and named (source:line), never thrown, and is a loss on the thread of the
// source's record before it: end_batch reports it (LostAt) where it falls among the records, as a
// replay reports a stored trace's gaps (relations/replay_check.h). A line skipped unparsed is still told
// bad when it is cut short or not UTF-8, as the trace reader would find it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "check/online/var_line_templates.h"
#include "trace/record.h"

namespace traincheck {

class JsonParser;

// Records of a thread were lost after `time` (a bad line of one of its sources).
struct LostAt {
  int64_t time = 0;
  int64_t process_id = 0, thread_id = 0;
};

// What the feed keeps: the receiver's interest, asked per line and per record.
struct FeedInterest {
  std::function<bool()> every_record;                      // no line may be skipped unparsed
  std::function<bool(std::string_view)> names;             // a raw "function"/"var_type" value is wanted
  std::function<bool(const Record&)> record;               // a parsed record is wanted
};

class LineFeed {
 public:
  // `on_parsed` sees every record parsed, wanted or not (the checker's progress: step, stage).
  LineFeed(FeedInterest interest, std::function<void(const Record&)> on_parsed);
  ~LineFeed();
  LineFeed(const LineFeed&) = delete;
  LineFeed& operator=(const LineFeed&) = delete;

  // `source` names the text in messages (a file name) and keeps its line numbers and last time.
  void add_lines(std::string_view source, std::string_view text);
  // Hands the batch's records to `deliver` in time order. With a `horizon` (a file was read only in part,
  // its backlog chunk by chunk), records later than it stay for a later batch, so that records of
  // different files are still delivered in time order.
  // `lost` is told of each loss among them (before the first record later than it).
  void end_batch(std::optional<int64_t> horizon, const std::function<void(const Record&)>& deliver,
                 const std::function<void(const LostAt&)>& lost = {});

  // Records lost from the source whose file name (without folder) is `file`, before its line `line`, as
  // the recorder's log says (trace/lost_records.h): a loss there, once the feed reaches that line.
  void expect_loss(const std::string& file, uint64_t line, uint64_t records);
  // Every source has ended: expected losses past a source's last line (lines lost at its end) are losses
  // after its last record; those of files never seen are counted.
  void end_of_sources();
  // Records lost so far: bad lines, and expected losses reached.
  uint64_t records_lost() const { return records_lost_; }

  // The time of the last line of `source` that was a valid record; nullopt if none.
  std::optional<int64_t> last_time(std::string_view source) const;
  uint64_t lines() const { return lines_; }          // non-blank lines given
  uint64_t bad_lines() const { return bad_lines_; }  // lines that did not parse
  // The sources that lost records (a bad line, an expected loss), in the order their first loss was found.
  const std::vector<std::string>& sources_with_losses() const { return sources_with_losses_; }
  const VarLineTemplates& templates() const { return templates_; }
  // The last bad-line messages ("source:line: what"), at most 20.
  const std::vector<std::string>& recent_errors() const { return recent_errors_; }

 private:
  bool may_be_wanted(std::string_view line) const;
  // `before`: the source's record before the bad line, if one is known (the loss is placed after it).
  void note_bad_line(std::string_view source, uint64_t line, const std::string& error, const LostAt* before);
  // A loss of `records` after `before` (if known), from `source`.
  void note_loss(std::string_view source, uint64_t records, const LostAt* before);
  // parse_trace_line on a copy of the line with the parser's padding (a line built from its template
  // needs none: the batch text is not copied whole).
  bool parse_line(std::string_view line, Record& out, std::string& error);

  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  struct SourceProgress {
    uint32_t index = 0;  // the source's, for its templates
    uint64_t lines = 0;
    std::optional<int64_t> last_time;
    int64_t last_process_id = 0, last_thread_id = 0;  // of the record at last_time
    bool had_loss = false;
    std::vector<std::pair<uint64_t, uint64_t>> expected_losses = {};  // (line, records), by line
    size_t next_expected_loss = 0;
  };

  FeedInterest interest_;
  std::function<void(const Record&)> on_parsed_;
  std::unique_ptr<JsonParser> parser_;
  std::string padded_;           // the line being parsed plus the parser's padding
  // This batch's wanted records: the first pending_count_. The others are delivered ones kept for their
  // storage: a record built from a template is assigned into one, its field vector already allocated
  // (50k parameters: a malloc and a free per record and step otherwise).
  std::vector<Record> pending_;
  size_t pending_count_ = 0;
  VarLineTemplates templates_;
  std::unordered_map<std::string, SourceProgress, StringHash, std::equal_to<>> sources_;
  std::vector<std::string> recent_errors_;
  std::vector<std::string> sources_with_losses_;
  std::vector<LostAt> losses_;  // not yet reported, by time
  std::unordered_map<std::string, std::vector<std::pair<uint64_t, uint64_t>>> expected_losses_;  // by file name
  uint64_t records_lost_ = 0;
  uint64_t lines_ = 0;
  uint64_t bad_lines_ = 0;
};

}  // namespace traincheck
