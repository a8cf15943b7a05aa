#include "check/online/online_checker.h"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "check/online/process_summaries.h"
#include "check/report/report_html_online.h"
#include "check/result_writer.h"
#include "common/output_file.h"
#include "relations/registry.h"

namespace traincheck {

namespace fs = std::filesystem;

std::vector<Invariant> OnlineChecker::load_invariants(const std::vector<std::string>& files) {
  return read_invariant_files(files, relation_names());
}

OnlineChecker::OnlineChecker(std::vector<Invariant> invariants, ApiSignatures signatures, OnlineCheckerOptions options)
    : options_(std::move(options)),
      invariants_(std::move(invariants)),
      signatures_(std::make_unique<ApiSignatures>(std::move(signatures))),
      states_(invariants_.size()),
      version_gate_(gate_by_version(invariants_, options_.library_versions)) {
  std::error_code ec;
  fs::create_directories(options_.output_dir, ec);
  if (ec) throw std::runtime_error(options_.output_dir + ": cannot create folder: " + ec.message());
  if (options_.write_invariants_file) write_invariant_file((fs::path(options_.output_dir) / "invariants.json").string(), invariants_);
  log_ = std::make_unique<ViolationLog>(failed_log_path(), options_.max_steps_kept, options_.max_samples_kept);
  dispatcher_ = std::make_unique<CheckDispatcher>(invariants_, signatures_.get(), states_, *log_, version_gate_.skipped);
  const CheckDispatcher& wanted = *dispatcher_;
  feed_ = std::make_unique<LineFeed>(
      FeedInterest{[&wanted] { return wanted.wants_every_record(); },
                   [&wanted](std::string_view name) { return wanted.wants_name(name); },
                   [&wanted](const Record& r) { return wanted.wants(r); }},
      [this](const Record& r) { note_progress(r); });
}

OnlineChecker::~OnlineChecker() = default;

std::string OnlineChecker::failed_log_path() const { return (fs::path(options_.output_dir) / "failed.log").string(); }

void OnlineChecker::note_progress(const Record& r) {
  ++records_;
  if (!r.var_type.empty() && std::find(var_types_seen_.begin(), var_types_seen_.end(), r.var_type) == var_types_seen_.end())
    var_types_seen_.push_back(r.var_type);
  if (r.has_step && (!current_step_ || r.step > *current_step_)) current_step_ = r.step;
  if (!r.stage.empty() && r.stage != current_stage_) current_stage_ = r.stage;
}

void OnlineChecker::check_record(const Record& r) {
  if (ended_) return;
  note_progress(r);
  if (dispatcher_->wants(r)) dispatcher_->dispatch(r);
}

void OnlineChecker::check_peer_step_end(const Record& r) {
  if (!ended_) dispatcher_->dispatch_peer_step_end(r);
}

void OnlineChecker::peer_step_matched(int64_t step, int64_t process_id) {
  if (!ended_) dispatcher_->dispatch_peer_step_matched(step, process_id);
}

void OnlineChecker::add_lines(std::string_view source, std::string_view text) {
  if (!ended_) feed_->add_lines(source, text);
}

void OnlineChecker::end_batch(std::optional<int64_t> horizon) {
  feed_->end_batch(horizon, [this](const Record& r) { dispatcher_->dispatch(r); },
                   [this](const LostAt& loss) { dispatcher_->records_lost(loss.process_id, loss.thread_id); });
}

void OnlineChecker::end_of_sources() {
  feed_->end_of_sources();
  end_batch();
}

void OnlineChecker::end_trace() {
  if (ended_) return;
  end_of_sources();
  ended_ = true;
  dispatcher_->end_trace();
}

OnlineCounts OnlineChecker::counts() const {
  OnlineCounts c;
  c.violations = log_->violations();
  c.invariants_violated = log_->invariants_violated();
  c.unwritten_violations = log_->unwritten_violations();
  c.write_errors = log_->write_errors();
  c.lines = feed_->lines();
  c.bad_lines = feed_->bad_lines();
  c.records_lost = feed_->records_lost() + unplaced_losses_;
  c.records = records_;
  c.dispatched = dispatcher_->dispatched();
  c.current_step = current_step_;
  c.current_stage = current_stage_;
  c.version_skipped = version_gate_.count;
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

std::string OnlineChecker::unevaluated_reason(const OnlineInvariantState& state) const {
  if (state.check == nullptr || state.triggered()) return {};
  // Only a check that reads nothing but variable states can lack its input; one over calls is judged on
  // the calls (a call it never saw leaves it untriggered, which is a verdict).
  const OnlineInterest interest = state.check->interest();
  if (interest.all_records || !interest.functions.empty() || interest.var_types.empty()) return {};
  for (const std::string& type : interest.var_types)
    if (std::find(var_types_seen_.begin(), var_types_seen_.end(), Name(type)) != var_types_seen_.end())
      return !current_step_ || *current_step_ <= 0 ? "no training step found" : std::string();
  return "no " + interest.var_types.front() + " state recorded";
}

Value OnlineChecker::summary() const {
  const OnlineCounts c = counts();
  std::vector<std::string> violated, triggered;
  Object unevaluated;
  for (const OnlineInvariantState& s : states_) {
    if (s.violations) violated.push_back(s.invariant->identity());
    if (s.check && s.triggered()) triggered.push_back(s.invariant->identity());
    if (std::string reason = unevaluated_reason(s); !reason.empty())
      unevaluated.push_back({intern_key(s.invariant->identity()), Value::string(std::move(reason))});
  }
  auto n = [](uint64_t x) { return Value::integer(static_cast<int64_t>(x)); };
  return make_object({{"violations", n(c.violations)},
                      {"invariants_violated", n(c.invariants_violated)},
                      {"triggered", n(c.triggered)},
                      {"checked", n(c.checked)},
                      {"not_checked", n(c.not_checked)},
                      {"version_skipped", n(c.version_skipped)},
                      {"version_note", Value::string(version_gate_.note)},
                      {"unevaluated", Value::object(std::move(unevaluated))},
                      {"records", n(c.records)},
                      {"bad_lines", n(c.bad_lines)},
                      {"records_lost", n(c.records_lost)},
                      {"write_errors", n(c.write_errors)},
                      {"unwritten_violations", n(c.unwritten_violations)},
                      {"violated_invariants", make_string_array(violated)},
                      {"triggered_invariants", make_string_array(triggered)},
                      {"failed_log", Value::string(failed_log_path())},
                      {"line_templates", make_object({{"records_built", n(feed_->templates().built())},
                                                      {"templates", n(feed_->templates().templates())},
                                                      {"bytes", n(feed_->templates().bytes())}})},
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
  data.incomplete_note = incomplete_trace_note();
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

void OnlineChecker::expect_loss(const LostRecords& loss, const std::string& file) {
  if (loss.placed) feed_->expect_loss(file, loss.line, loss.records);
  else unplaced_losses_ += loss.records;
}

std::string OnlineChecker::incomplete_trace_note() const {
  const uint64_t lost = feed_->records_lost() + unplaced_losses_;
  return lost ? incomplete_trace_line(lost, feed_->sources_with_losses()) : std::string();
}

void OnlineChecker::write_violations_summary() const {
  const OnlineCounts c = counts();
  write_violations_summary_file((fs::path(options_.output_dir) / "violations_summary.json").string(), violation_summary(), Value(),
                                c.records_lost ? incomplete_trace_value(c.records_lost, feed_->sources_with_losses()) : Value());
}

void OnlineChecker::write_report(const std::string& path) const {
  // Written beside and renamed: a browser refreshing the page never reads half of it.
  replace_output_file(path, render_report());
}

}  // namespace traincheck
