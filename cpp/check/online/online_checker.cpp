#include "check/online/online_checker.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "check/online/process_summaries.h"
#include "check/report/report_html_online.h"
#include "check/result_writer.h"
#include "common/assert.h"
#include "common/fd_write.h"
#include "relations/registry.h"
#include "trace/json_parse.h"
#include "trace/trace_reader.h"

namespace traincheck {

namespace fs = std::filesystem;

namespace {

constexpr size_t kMaxRecentErrors = 20;

// CLOCK_MONOTONIC (libstdc++'s steady_clock), the clock of the trace's `time`: detection minus a
// record's time is the detection latency.
int64_t monotonic_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// memmem: glibc's two-way search, much faster than string_view::find on JSON, where the first
// character of a key ('"') is everywhere.
size_t find_in(std::string_view hay, std::string_view needle, size_t from) {
  if (from >= hay.size()) return std::string_view::npos;
  const void* at = ::memmem(hay.data() + from, hay.size() - from, needle.data(), needle.size());
  return at ? static_cast<size_t>(static_cast<const char*>(at) - hay.data()) : std::string_view::npos;
}

}  // namespace

std::vector<Invariant> OnlineChecker::load_invariants(const std::vector<std::string>& files) {
  return read_invariant_files(files, relation_names());
}

OnlineChecker::OnlineChecker(std::vector<Invariant> invariants, ApiSignatures signatures, OnlineCheckerOptions options)
    : options_(std::move(options)),
      invariants_(std::move(invariants)),
      signatures_(std::make_unique<ApiSignatures>(std::move(signatures))),
      context_managers_(OnlineContextManagers::named_by(invariants_), signatures_.get()),
      parser_(std::make_unique<JsonParser>()) {
  std::error_code ec;
  fs::create_directories(options_.output_dir, ec);
  if (ec) throw std::runtime_error(options_.output_dir + ": cannot create folder: " + ec.message());
  if (options_.write_invariants_file) write_invariant_file((fs::path(options_.output_dir) / "invariants.json").string(), invariants_);
  const std::string failed = failed_log_path();
  // O_APPEND: several processes of one run (DDP ranks) may share the file; one write() per entry.
  failed_fd_ = ::open(failed.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (failed_fd_ < 0) throw std::runtime_error(failed + ": cannot open for appending: " + std::strerror(errno));

  make_checks();
  for (const auto& [type, ids] : by_peer_var_type_) peer_var_types_.push_back(type);
  std::sort(peer_var_types_.begin(), peer_var_types_.end());
  // The context managers' records are wanted too (with no check of their own unless one names them).
  for (const std::string& f : context_managers_.functions()) by_function_.try_emplace(f);
}

void OnlineChecker::make_checks() {
  states_.resize(invariants_.size());
  std::vector<std::pair<const Relation*, std::vector<size_t>>> by_relation;  // in order of first invariant
  for (size_t i = 0; i < invariants_.size(); ++i) {
    OnlineInvariantState& s = states_[i];
    s.invariant = &invariants_[i];
    s.relation = find_relation(invariants_[i].relation);
    s.display_name = invariant_label(s.relation, invariants_[i]);
    if (!s.relation) continue;
    auto group = std::find_if(by_relation.begin(), by_relation.end(), [&](const auto& g) { return g.first == s.relation; });
    if (group == by_relation.end()) group = by_relation.insert(by_relation.end(), {s.relation, {}});
    group->second.push_back(i);
  }
  for (const auto& [relation, ids] : by_relation) {
    std::vector<const Invariant*> invariants;
    for (size_t id : ids) invariants.push_back(&invariants_[id]);
    for (Relation::OnlineCheckOf& made : relation->make_online_checks(invariants, signatures_.get())) {
      TC_ASSERT(!made.members.empty() && made.members.size() == made.check->members(), "a check's members are its invariants");
      CheckEntry& entry = checks_.emplace_back();
      entry.check = std::move(made.check);
      for (size_t m : made.members) entry.members.push_back(static_cast<uint32_t>(ids.at(m)));
    }
  }
  // Checks in the order of their invariants: records are offered, and violations of one record written,
  // in invariant order, whichever relation shares work between invariants.
  std::sort(checks_.begin(), checks_.end(), [](const CheckEntry& a, const CheckEntry& b) { return a.members[0] < b.members[0]; });
  for (size_t c = 0; c < checks_.size(); ++c) {
    const CheckEntry& entry = checks_[c];
    for (size_t m = 0; m < entry.members.size(); ++m) {
      states_[entry.members[m]].check = entry.check.get();
      states_[entry.members[m]].member = static_cast<uint32_t>(m);
    }
    const OnlineInterest interest = entry.check->interest();
    const auto id = static_cast<uint32_t>(c);
    if (interest.all_records) all_records_.push_back(id);
    for (const std::string& f : interest.functions) by_function_[f].push_back(id);
    for (const std::string& t : interest.var_types) by_var_type_[t].push_back(id);
    if (interest.peer_step_ends) {
      for (const std::string& t : interest.var_types) by_peer_var_type_[t].push_back(id);
      peer_fields_.insert(interest.peer_fields.begin(), interest.peer_fields.end());
    }
  }
}

OnlineChecker::~OnlineChecker() {
  if (failed_fd_ >= 0) ::close(failed_fd_);
}

std::string OnlineChecker::failed_log_path() const { return (fs::path(options_.output_dir) / "failed.log").string(); }

bool OnlineChecker::wanted(const Record& r) const {
  if (!all_records_.empty()) return true;
  return r.is_api() ? by_function_.find(r.function) != by_function_.end() : by_var_type_.find(r.var_type) != by_var_type_.end();
}

// Before parsing: the values of every `"function"` / `"var_type"` key in the raw line. A line is skipped
// only when it has such keys and no check wants any of their values; the record's own key is among them,
// so a wanted record is never skipped, and a line this cannot read (escapes, no key) is parsed. Parsing is
// most of the cost of a record, and most records of a run are of APIs no invariant names.
bool OnlineChecker::may_be_wanted(std::string_view line) const {
  if (!all_records_.empty()) return true;
  bool found_key = false;
  for (const auto& [key, table] : {std::pair<std::string_view, const Table*>{"\"function\"", &by_function_},
                                   std::pair<std::string_view, const Table*>{"\"var_type\"", &by_var_type_}}) {
    for (size_t at = find_in(line, key, 0); at != std::string_view::npos; at = find_in(line, key, at + 1)) {
      size_t v = at + key.size();
      while (v < line.size() && (line[v] == ' ' || line[v] == ':')) ++v;
      if (v >= line.size() || line[v] != '"') return true;
      const size_t end = line.find('"', v + 1);
      if (end == std::string_view::npos) return true;
      const std::string_view value = line.substr(v + 1, end - v - 1);
      if (value.find('\\') != std::string_view::npos) return true;
      if (by_function_.find(value) != by_function_.end() || by_var_type_.find(value) != by_var_type_.end()) return true;
      found_key = true;
    }
  }
  return !found_key;
}

void OnlineChecker::note_progress(const Record& r) {
  ++counts_.records;
  if (r.has_step && (!counts_.current_step || r.step > *counts_.current_step)) counts_.current_step = r.step;
  if (!r.stage.empty() && r.stage != counts_.current_stage) counts_.current_stage = r.stage;
}

void OnlineChecker::check_record(const Record& r) {
  if (ended_) return;
  note_progress(r);
  if (wanted(r)) dispatch(r);
}

void OnlineChecker::dispatch(const Record& record) {
  ++counts_.dispatched;
  const Record& r = context_managers_.empty() ? record : context_managers_.before(record, enriched_);
  auto offer = [&](const std::vector<uint32_t>& ids) {
    for (uint32_t id : ids) {
      TC_ASSERT(id < checks_.size(), "the tables index checks_");
      checks_[id].check->on_record(r, found_);
      report_found(checks_[id]);
    }
  };
  offer(all_records_);
  if (peer_state_observer_ && !r.is_api() && by_peer_var_type_.find(r.var_type) != by_peer_var_type_.end())
    peer_state_observer_(record);
  const Table& table = r.is_api() ? by_function_ : by_var_type_;
  auto it = table.find(r.is_api() ? r.function : r.var_type);
  if (it != table.end()) offer(it->second);
  if (!context_managers_.empty()) context_managers_.after(record);
}

void OnlineChecker::check_peer_step_end(const Record& r) {
  if (ended_ || r.is_api()) return;
  auto it = by_peer_var_type_.find(r.var_type);
  if (it == by_peer_var_type_.end()) return;
  for (uint32_t id : it->second) {
    checks_[id].check->on_peer_step_end(r, found_);
    report_found(checks_[id]);
  }
}

void OnlineChecker::report_found(const CheckEntry& entry) {
  for (OnlineViolation& v : found_) {
    TC_ASSERT(v.member < entry.members.size(), "a violation names one of its check's members");
    report(states_[entry.members[v.member]], v);
  }
  found_.clear();
}

void OnlineChecker::report(OnlineInvariantState& s, OnlineViolation& v) {
  const bool first = s.violations == 0;
  record_violation(s, v);
  if (first && s.violations > 0 && first_violation_observer_) first_violation_observer_(s);
}

void OnlineChecker::record_violation(OnlineInvariantState& s, OnlineViolation& v) {
  if (v.records.empty()) {  // counted, not written (OnlineViolation::unwritten)
    if (v.unwritten == 0) return;
    if (s.violations == 0) ++counts_.invariants_violated;
    s.violations += v.unwritten;
    counts_.violations += v.unwritten;
    counts_.unwritten_violations += v.unwritten;
    if (!s.first_step || v.step < *s.first_step) s.first_step = v.step;
    if (!s.last_step || v.step > *s.last_step) s.last_step = v.step;
    if (s.steps.size() < options_.max_steps_kept) s.steps.insert(v.step);
    return;
  }
  if (s.violations++ == 0) ++counts_.invariants_violated;
  ++counts_.violations;
  Array records;
  for (const Record& r : v.records) {
    records.push_back(r.to_value());
    if (r.has_step) {
      if (!s.first_step || r.step < *s.first_step) {
        s.first_step = r.step;
        s.first_stage = std::string(r.stage);
      }
      if (!s.last_step || r.step >= *s.last_step) {
        s.last_step = r.step;
        s.last_stage = std::string(r.stage);
      }
      if (s.steps.size() < options_.max_steps_kept) s.steps.insert(r.step);
    }
    if (s.samples.size() < options_.max_samples_kept) s.samples.push_back(r);
  }
  std::string line;
  append_value_json(line, make_object({{"violated_id", Value::integer(static_cast<int64_t>(next_violation_id_++))},
                                       {"invariant", s.invariant->to_value()},
                                       {"display_name", Value::string(s.display_name)},  // ours: the label, for readers
                                       {"check_passed", Value::boolean(false)},
                                       {"detection_time", Value::integer(monotonic_now_ns())},
                                       {"trace", Value::array(std::move(records))}}),
                    JsonStyle::Spaced);
  line += '\n';
  if (!write_all(failed_fd_, line)) ++counts_.write_errors;
}

void OnlineChecker::add_lines(std::string_view source, std::string_view text) {
  if (ended_) return;
  padded_.assign(text);
  padded_.append(kJsonPadding, '\0');
  auto seen = sources_.find(source);
  if (seen == sources_.end()) seen = sources_.emplace(std::string(source), SourceProgress{}).first;
  SourceProgress& progress = seen->second;
  const char* data = padded_.data();
  std::string error;
  Record r;
  size_t pos = 0;
  size_t last_b = 0, last_e = 0;  // the last non-blank line
  bool last_parsed = false;       // ... was parsed into a valid record (its time is known)
  while (pos < text.size()) {
    const void* nl = std::memchr(data + pos, '\n', text.size() - pos);
    const size_t eol = nl ? static_cast<size_t>(static_cast<const char*>(nl) - data) : text.size();
    size_t b = pos, e = eol;
    pos = eol + 1;
    ++progress.lines;
    while (b < e && (data[b] == ' ' || data[b] == '\t' || data[b] == '\r')) ++b;
    while (e > b && (data[e - 1] == ' ' || data[e - 1] == '\t' || data[e - 1] == '\r')) --e;
    if (b == e) continue;
    ++counts_.lines;
    last_b = b;
    last_e = e;
    last_parsed = false;
    if (!may_be_wanted(std::string_view(data + b, e - b))) continue;
    if (!parse_trace_line(*parser_, data + b, e - b, r, error)) {
      ++counts_.bad_lines;
      if (recent_errors_.size() >= kMaxRecentErrors) recent_errors_.erase(recent_errors_.begin());
      recent_errors_.push_back(std::string(source) + ":" + std::to_string(progress.lines) + ": " + error);
      continue;
    }
    last_parsed = true;
    progress.last_time = r.time;
    note_progress(r);
    if (wanted(r)) pending_.push_back(std::move(r));
  }
  // The last line's time bounds what this source has delivered (end_batch's horizon); a line no check
  // wanted was not parsed above.
  if (last_e > last_b && !last_parsed && parse_trace_line(*parser_, data + last_b, last_e - last_b, r, error))
    progress.last_time = r.time;
}

void OnlineChecker::end_batch(std::optional<int64_t> horizon) {
  std::stable_sort(pending_.begin(), pending_.end(), [](const Record& a, const Record& b) { return a.time < b.time; });
  size_t n = pending_.size();
  if (horizon)
    n = static_cast<size_t>(std::upper_bound(pending_.begin(), pending_.end(), *horizon,
                                             [](int64_t t, const Record& r) { return t < r.time; }) -
                            pending_.begin());
  for (size_t i = 0; i < n; ++i) dispatch(pending_[i]);
  pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(n));
}

void OnlineChecker::end_trace() {
  if (ended_) return;
  end_batch();
  ended_ = true;
  for (CheckEntry& entry : checks_) {
    entry.check->on_trace_end(found_);
    report_found(entry);
  }
}

std::optional<int64_t> OnlineChecker::last_time(std::string_view source) const {
  auto it = sources_.find(source);
  return it == sources_.end() ? std::nullopt : it->second.last_time;
}

OnlineCounts OnlineChecker::counts() const {
  OnlineCounts c = counts_;
  c.triggered = c.checked = c.not_checked = 0;
  for (const OnlineInvariantState& s : states_) {
    if (!s.check) {
      ++c.not_checked;
      continue;
    }
    ++c.checked;
    if (s.triggered()) ++c.triggered;
  }
  return c;
}

Value OnlineChecker::summary() const {
  const OnlineCounts c = counts();
  std::vector<std::string> violated, triggered;
  for (const OnlineInvariantState& s : states_) {
    if (s.violations) violated.push_back(s.invariant->identity());
    if (s.check && s.triggered()) triggered.push_back(s.invariant->identity());
  }
  auto n = [](uint64_t x) { return Value::integer(static_cast<int64_t>(x)); };
  return make_object({{"violations", n(c.violations)},
                      {"invariants_violated", n(c.invariants_violated)},
                      {"triggered", n(c.triggered)},
                      {"checked", n(c.checked)},
                      {"not_checked", n(c.not_checked)},
                      {"records", n(c.records)},
                      {"bad_lines", n(c.bad_lines)},
                      {"write_errors", n(c.write_errors)},
                      {"unwritten_violations", n(c.unwritten_violations)},
                      {"violated_invariants", make_string_array(violated)},
                      {"triggered_invariants", make_string_array(triggered)},
                      {"failed_log", Value::string(failed_log_path())},
                      {"violation_summary", process_violation_rows_value(process_violation_rows())}});
}

std::vector<ProcessViolationRow> OnlineChecker::process_violation_rows() const {
  std::vector<ProcessViolationRow> rows;
  for (const OnlineInvariantState& s : states_)
    if (s.violations)
      rows.push_back({s.invariant->identity(),
                      ViolationSummaryRow{s.display_name, s.invariant->relation, "", s.first_step, s.last_step, s.violations,
                                          std::vector<int64_t>(s.steps.begin(), s.steps.end()), s.first_stage,
                                          s.last_stage, s.invariant->held_on_programs,
                                          s.invariant->num_positive_examples}});
  return rows;
}

std::vector<ViolationSummaryRow> OnlineChecker::violation_summary() const {
  std::vector<ViolationSummaryRow> rows;
  for (ProcessViolationRow& r : process_violation_rows()) rows.push_back(std::move(r.row));
  sort_by_first_step(rows);
  return rows;
}

std::string OnlineChecker::render_report() const {
  const OnlineCounts c = counts();
  OnlineReportData data;
  data.output_dir = options_.output_dir;
  data.total_invariants = states_.size();
  data.triggered = c.triggered;
  data.not_checked = c.not_checked;
  data.violations = c.violations;
  data.current_step = c.current_step;
  data.current_stage = c.current_stage;
  for (const OnlineInvariantState& s : states_) {
    if (!s.check) continue;
    report_parts::Counts& rel = data.relations[s.invariant->relation];
    const bool triggered = s.triggered();
    if (s.violations) {
      ++rel.failed;
      OnlineReportRow row;
      row.invariant = s.invariant;
      row.display_name = s.display_name;
      row.count = s.violations;
      row.steps.assign(s.steps.begin(), s.steps.end());
      row.first_step = s.first_step;
      row.last_step = s.last_step;
      row.first_stage = s.first_stage;
      for (const Record& r : s.samples) row.samples.push_back(&r);
      data.rows.push_back(std::move(row));
    } else if (triggered) {
      ++rel.passed;
      ++data.passing;
    } else {
      ++rel.not_triggered;
      ++data.not_triggered;
      if (data.not_triggered_labels.size() < 50) data.not_triggered_labels.push_back(s.display_name);
    }
  }
  return render_online_report_html(data);
}

void OnlineChecker::write_violations_summary() const {
  write_violations_summary_file((fs::path(options_.output_dir) / "violations_summary.json").string(), violation_summary());
}

void OnlineChecker::write_report(const std::string& path) const {
  // Written beside and renamed: a browser refreshing the page never reads half of it.
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    out << render_report();
    if (!out) throw std::runtime_error(tmp + ": write failed");
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) throw std::runtime_error(path + ": cannot replace: " + ec.message());
}

}  // namespace traincheck
