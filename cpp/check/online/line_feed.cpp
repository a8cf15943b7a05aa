#include "check/online/line_feed.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "trace/json_parse.h"
#include "trace/trace_reader.h"

namespace traincheck {

namespace {

constexpr size_t kMaxRecentErrors = 20;

// memmem: glibc's two-way search, much faster than string_view::find on JSON, where the first
// character of a key ('"') is everywhere.
size_t find_in(std::string_view hay, std::string_view needle, size_t from) {
  if (from >= hay.size()) return std::string_view::npos;
  const void* at = ::memmem(hay.data() + from, hay.size() - from, needle.data(), needle.size());
  return at ? static_cast<size_t>(static_cast<const char*>(at) - hay.data()) : std::string_view::npos;
}

}  // namespace

LineFeed::LineFeed(FeedInterest interest, std::function<void(const Record&)> on_parsed)
    : interest_(std::move(interest)), on_parsed_(std::move(on_parsed)), parser_(std::make_unique<JsonParser>()) {}

LineFeed::~LineFeed() = default;

// The values of every `"function"` / `"var_type"` key in the raw line. A line is skipped only when it has
// such keys and none of their values is wanted; the record's own key is among them, so a wanted record is
// never skipped, and a line this cannot read (escapes, no key) is parsed.
bool LineFeed::may_be_wanted(std::string_view line) const {
  if (interest_.every_record()) return true;
  bool found_key = false;
  // "var_type" first: a state record's own key comes early in its line and is usually the wanted one (a
  // model's parameters), so the line is not searched to its end for a "function" key it lacks.
  for (std::string_view key : {std::string_view("\"var_type\""), std::string_view("\"function\"")}) {
    for (size_t at = find_in(line, key, 0); at != std::string_view::npos; at = find_in(line, key, at + 1)) {
      size_t v = at + key.size();
      while (v < line.size() && (line[v] == ' ' || line[v] == ':')) ++v;
      if (v >= line.size() || line[v] != '"') return true;
      const size_t end = line.find('"', v + 1);
      if (end == std::string_view::npos) return true;
      const std::string_view value = line.substr(v + 1, end - v - 1);
      if (value.find('\\') != std::string_view::npos) return true;
      if (interest_.names(value)) return true;
      found_key = true;
    }
  }
  return !found_key;
}

void LineFeed::note_bad_line(std::string_view source, uint64_t line, const std::string& error, const LostAt* before) {
  ++bad_lines_;
  note_loss(source, 1, before);
  if (recent_errors_.size() >= kMaxRecentErrors) recent_errors_.erase(recent_errors_.begin());
  recent_errors_.push_back(std::string(source) + ":" + std::to_string(line) + ": " + error);
}

void LineFeed::expect_loss(const std::string& file, uint64_t line, uint64_t records) {
  auto& list = expected_losses_[file];
  list.insert(std::upper_bound(list.begin(), list.end(), std::make_pair(line, records)), {line, records});
}

void LineFeed::end_of_sources() {
  for (auto& [source, progress] : sources_) {
    std::optional<LostAt> last;
    if (progress.last_time) last = LostAt{*progress.last_time, progress.last_process_id, progress.last_thread_id};
    for (; progress.next_expected_loss < progress.expected_losses.size(); ++progress.next_expected_loss)
      note_loss(source, progress.expected_losses[progress.next_expected_loss].second, last ? &*last : nullptr);
  }
  for (auto& [file, losses] : expected_losses_)
    for (const auto& [line, records] : losses) records_lost_ += records;
  expected_losses_.clear();
}

void LineFeed::note_loss(std::string_view source, uint64_t records, const LostAt* before) {
  records_lost_ += records;
  if (before != nullptr)
    losses_.insert(std::upper_bound(losses_.begin(), losses_.end(), before->time,
                                    [](int64_t t, const LostAt& l) { return t < l.time; }),
                   *before);
  auto& progress = sources_.find(source)->second;
  if (!progress.had_loss) {
    progress.had_loss = true;
    sources_with_losses_.emplace_back(source);
  }
}

bool LineFeed::parse_line(std::string_view line, Record& out, std::string& error) {
  padded_.assign(line);
  padded_.append(kJsonPadding, '\0');
  return parse_trace_line(*parser_, padded_.data(), line.size(), out, error);
}

void LineFeed::add_lines(std::string_view source, std::string_view text) {
  auto seen = sources_.find(source);
  if (seen == sources_.end()) {
    seen = sources_.emplace(std::string(source), SourceProgress{static_cast<uint32_t>(sources_.size()), 0, std::nullopt}).first;
    const size_t slash = source.find_last_of('/');
    auto expected = expected_losses_.find(std::string(slash == std::string_view::npos ? source : source.substr(slash + 1)));
    if (expected != expected_losses_.end()) seen->second.expected_losses = std::move(expected->second);
  }
  SourceProgress& progress = seen->second;
  const char* data = text.data();
  std::string error;
  size_t pos = 0;
  size_t last_b = 0, last_e = 0;  // the last non-blank line
  bool last_skipped = false;      // ... was skipped unparsed, whole (a loss after it is placed by parsing it)
  // The record before the line at hand, where a loss found at that line is placed.
  std::optional<LostAt> before;
  if (progress.last_time) before = LostAt{*progress.last_time, progress.last_process_id, progress.last_thread_id};
  // The record before the line at hand, once a loss needs it: a line skipped unparsed is parsed now.
  auto record_before = [&]() -> const LostAt* {
    Record previous;
    std::string ignored;
    if (last_skipped && parse_line(std::string_view(data + last_b, last_e - last_b), previous, ignored))
      before = LostAt{previous.time, previous.process_id, previous.thread_id};
    last_skipped = false;
    return before ? &*before : nullptr;
  };
  auto bad_line = [&](const std::string& what) { note_bad_line(source, progress.lines, what, record_before()); };
  while (pos < text.size()) {
    const void* nl = std::memchr(data + pos, '\n', text.size() - pos);
    const size_t eol = nl ? static_cast<size_t>(static_cast<const char*>(nl) - data) : text.size();
    size_t b = pos, e = eol;
    pos = eol + 1;
    ++progress.lines;
    for (auto& losses = progress.expected_losses;
         progress.next_expected_loss < losses.size() && losses[progress.next_expected_loss].first <= progress.lines;
         ++progress.next_expected_loss)
      note_loss(source, losses[progress.next_expected_loss].second, record_before());
    while (b < e && (data[b] == ' ' || data[b] == '\t' || data[b] == '\r')) ++b;
    while (e > b && (data[e - 1] == ' ' || data[e - 1] == '\t' || data[e - 1] == '\r')) --e;
    if (b == e) continue;
    ++lines_;
    const std::string_view line(data + b, e - b);
    // The next pending slot: a delivered record's storage, or a new one. Kept only if wanted.
    if (pending_count_ == pending_.size()) pending_.emplace_back();
    Record& r = pending_[pending_count_];
    const bool built = templates_.build(progress.index, line, r);  // assigns every member
    if (!built) {
      if (!may_be_wanted(line)) {
        // Unparsed, but a line cut short or not UTF-8 is as damaged as the reader finds it.
        if (line.back() != '}' || !valid_utf8(line)) {
          if (!parse_line(line, r, error)) {
            bad_line(error);
            last_skipped = false;
            last_b = b, last_e = e;
            continue;
          }
        }
        last_b = b, last_e = e, last_skipped = true;
        continue;
      }
      if (!parse_line(line, r, error)) {  // over a fresh record (parse_trace_line)
        bad_line(error);
        last_b = b, last_e = e, last_skipped = false;
        continue;
      }
    }
    last_b = b, last_e = e, last_skipped = false;
    before = LostAt{r.time, r.process_id, r.thread_id};
    progress.last_time = r.time;
    progress.last_process_id = r.process_id;
    progress.last_thread_id = r.thread_id;
    on_parsed_(r);
    if (!interest_.record(r)) continue;
    if (!built) {
      // Only wanted records' lines become templates: a line nothing wants is skipped unparsed anyway.
      templates_.learn(progress.index, line, r);
      r.share_fields();  // checks keep copies of it, some for steps
    }
    ++pending_count_;
  }
  // The last line's time bounds what this source has delivered (end_batch's horizon); a line nothing
  // wanted was not parsed above.
  Record last;
  if (last_skipped && parse_line(std::string_view(data + last_b, last_e - last_b), last, error)) {
    progress.last_time = last.time;
    progress.last_process_id = last.process_id;
    progress.last_thread_id = last.thread_id;
  }
}

void LineFeed::end_batch(std::optional<int64_t> horizon, const std::function<void(const Record&)>& deliver,
                         const std::function<void(const LostAt&)>& lost) {
  size_t next_loss = 0;  // losses_ is by time: each goes before the first record later than it
  auto losses_until = [&](int64_t time) {
    for (; next_loss < losses_.size() && losses_[next_loss].time < time; ++next_loss)
      if (lost) lost(losses_[next_loss]);
  };
  // One source's records usually come in time order already: a check is cheaper than a merge sort that
  // moves every record.
  const auto earlier = [](const Record& a, const Record& b) { return a.time < b.time; };
  const auto first = pending_.begin(), live_end = pending_.begin() + static_cast<std::ptrdiff_t>(pending_count_);
  if (!std::is_sorted(first, live_end, earlier)) std::stable_sort(first, live_end, earlier);
  size_t n = pending_count_;
  if (horizon)
    n = static_cast<size_t>(std::upper_bound(first, live_end, *horizon, [](int64_t t, const Record& r) { return t < r.time; }) - first);
  for (size_t i = 0; i < n; ++i) {
    // A record's shared fields (a template's, var_line_templates.h) are read by every check it goes to,
    // and a model's templates are tens of megabytes: fetched a few records ahead, not waited for
    // (consistency_scale at 50k parameters: a fifth less of the writer's checking).
    if (i + 8 < n) __builtin_prefetch(pending_[i + 8].shared_fields.payload_id());
    if (i + 4 < n && pending_[i + 4].shared_fields.is_object()) {
      const Object& fields = pending_[i + 4].shared_fields.as_object();
      const char* bytes = reinterpret_cast<const char*>(fields.data());
      for (size_t b = 0; b < fields.size() * sizeof(Field); b += 64) __builtin_prefetch(bytes + b);
    }
    losses_until(pending_[i].time);
    deliver(pending_[i]);
    // What it holds goes now, while it is in cache; its field vector stays for the next record.
    pending_[i].fields.clear();
    pending_[i].shared_fields = Value();
  }
  // Losses up to the horizon: the records after them that are still to come are later than it.
  if (horizon) {
    for (; next_loss < losses_.size() && losses_[next_loss].time <= *horizon; ++next_loss)
      if (lost) lost(losses_[next_loss]);
  } else {
    losses_until(std::numeric_limits<int64_t>::max());
    for (; next_loss < losses_.size(); ++next_loss)
      if (lost) lost(losses_[next_loss]);
  }
  losses_.erase(losses_.begin(), losses_.begin() + static_cast<std::ptrdiff_t>(next_loss));
  // The records past the horizon move to the front (swapped: the delivered ones' storage goes behind).
  std::rotate(first, first + static_cast<std::ptrdiff_t>(n), live_end);
  pending_count_ -= n;
}

std::optional<int64_t> LineFeed::last_time(std::string_view source) const {
  auto it = sources_.find(source);
  return it == sources_.end() ? std::nullopt : it->second.last_time;
}

}  // namespace traincheck
