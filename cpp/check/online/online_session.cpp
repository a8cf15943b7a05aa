#include "check/online/online_session.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include "common/fd_write.h"
#include "common/output_file.h"
#include "trace/json_parse.h"

namespace traincheck {

namespace fs = std::filesystem;

namespace {

uint64_t thread_cpu_ns() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1000000000ULL + static_cast<uint64_t>(t.tv_nsec);
}

// CLOCK_MONOTONIC, the clock of the records' `time` (libstdc++'s steady_clock).
int64_t monotonic_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// True for the first process of the run to get here: it creates invariants.json (empty, filled by the
// checker) and owns report.html; false when another process of the run did. Throws when the file can be
// neither created nor found (a full or read-only folder, a link planted under its name): the check
// cannot start.
bool claim_invariants_file(const std::string& dir) {
  create_output_subfolder(dir);  // the collector's <output-dir>/online_check: never a link planted there
  const std::string path = (fs::path(dir) / "invariants.json").string();
  const int fd = open_output_fd(path, OutputMode::CreateNew);
  if (fd < 0) {
    const int error = errno;
    struct stat st{};
    if (error == EEXIST && ::lstat(path.c_str(), &st) == 0 && !S_ISLNK(st.st_mode)) return false;
    throw std::runtime_error(output_open_error(path, error == EEXIST ? ELOOP : error));
  }
  ::close(fd);
  return true;
}

}  // namespace

ApiSignatures parse_signatures_json(const std::string& text) {
  if (text.empty()) return {};
  Value root;
  std::string error;
  if (!parse_json(text, root, error)) throw std::runtime_error("api signatures: invalid JSON: " + error);
  return ApiSignatures::from_value(root, "<api signatures>");
}

OnlineSession::OnlineSession(OnlineSessionOptions options) : options_(std::move(options)), pid_(::getpid()) {
  open_outputs(OnlineChecker::load_invariants(options_.invariant_files), parse_signatures_json(options_.signatures_json));
}

OnlineSession::OnlineSession(OnlineSessionOptions options, std::vector<Invariant> invariants, ApiSignatures signatures)
    : options_(std::move(options)), pid_(::getpid()) {
  open_outputs(std::move(invariants), std::move(signatures));
}

void OnlineSession::open_outputs(std::vector<Invariant> invariants, ApiSignatures signatures) {
  OnlineCheckerOptions checker;
  checker.output_dir = options_.output_dir;
  checker.library_versions = options_.library_versions;
  const bool owner = claim_invariants_file(options_.output_dir);
  checker.write_invariants_file = owner;
  const std::string pid = std::to_string(pid_);
  report_path_ = (fs::path(options_.output_dir) / (owner ? "report.html" : "report_" + pid + ".html")).string();
  summary_path_ = (fs::path(options_.output_dir) / ("summary_" + pid + ".json")).string();
  checker_ = std::make_unique<OnlineChecker>(std::move(invariants), std::move(signatures), std::move(checker));
  checker_->set_first_violation_observer([this](const OnlineInvariantState& s) { on_first_violation(s); });
  last_report_ = std::chrono::steady_clock::now();
}

void OnlineSession::on_first_violation(const OnlineInvariantState& state) {
  ViolationAlert alert = alert_of(state);
  if (options_.on_violation != ViolationAction::Log) {
    // One write of the whole line: never interleaved with the training's own output. A closed stderr
    // loses only the line: the alert is in failed.log and the queue.
    write_all(STDERR_FILENO, alert_console_line(alert, checker_->failed_log_path()));
  }
  std::lock_guard<std::mutex> lock(alerts_mutex_);
  if (alerts_.size() >= kMaxQueuedAlerts) return;
  alerts_.push_back(std::move(alert));
  alerts_waiting_.store(true, std::memory_order_release);
}

std::vector<ViolationAlert> OnlineSession::take_alerts() {
  std::vector<ViolationAlert> out;
  // In a fork child this is the parent's session, whose lock the fork may have copied held: the child's
  // own session (on_fork_child) keeps the child's alerts.
  if (!alerts_waiting() || ::getpid() != pid_) return out;
  std::lock_guard<std::mutex> lock(alerts_mutex_);
  out.swap(alerts_);
  alerts_waiting_.store(false, std::memory_order_release);
  return out;
}

TcRecordSink OnlineSession::sink() {
  TcRecordSink s{};
  s.version = TC_RECORD_SINK_VERSION;
  s.context = this;
  s.on_lines = &OnlineSession::on_lines;
  s.on_pass_end = &OnlineSession::on_pass_end;
  s.on_close = &OnlineSession::on_close;
  s.on_fork_child = &OnlineSession::on_fork_child;
  return s;
}

bool OnlineSession::enable_cross_rank(std::unique_ptr<PeerStore> store, CrossRankOptions options) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (checker_->peer_var_types().empty()) return false;
  // Replicas in sync publish equal digests: a peer's step with this rank's is not fetched when every
  // check that compares across ranks can judge it so (step_digest.h).
  options.match_by_digest = checker_->peer_steps_by_digest();
  cross_rank_ = std::make_unique<CrossRankExchange>(std::move(store), options, checker_->peer_fields());
  checker_->set_peer_state_observer([exchange = cross_rank_.get()](const Record& r) { exchange->observe(r); });
  return true;
}

std::optional<CrossRankStats> OnlineSession::cross_rank_stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!cross_rank_) return std::nullopt;
  return cross_rank_->stats();
}

void OnlineSession::check_peer_ends_locked(const std::vector<Record>& ends) {
  // In step order, matched steps among the others (both come in step order): a peer instance first seen
  // at a step takes its history from the peer's steps matched before it.
  const std::vector<MatchedPeerStep> matched = cross_rank_->take_matched();
  size_t m = 0;
  for (const Record& r : ends) {
    for (; m < matched.size() && matched[m].step < r.step; ++m) checker_->peer_step_matched(matched[m].step, matched[m].process_id);
    checker_->check_peer_step_end(r);
  }
  for (; m < matched.size(); ++m) checker_->peer_step_matched(matched[m].step, matched[m].process_id);
}

uint64_t OnlineSession::fail_locked(const char* what) {
  // The first error is said on stderr (an output refused, a full disk): the others are counted in the
  // summary. One write of the whole line, as the alerts.
  if (errors_++ == 0)
    write_all(STDERR_FILENO, std::string("traincheck: warning: in-process check: ") + what + "; later errors are counted in " +
                                 summary_path_ + "\n");
  last_error_ = what;
  return 1;
}

// Runs `body` under the session's lock; an exception becomes one counted error, never a throw into the
// recorder's writer thread.
template <typename Body>
uint64_t OnlineSession::guarded(void* context, const char* where, Body&& body) noexcept {
  auto* self = static_cast<OnlineSession*>(context);
  std::lock_guard<std::mutex> lock(self->mutex_);
  try {
    body(*self);
    return 0;
  } catch (const std::exception& e) {
    return self->fail_locked(e.what());
  } catch (...) {
    return self->fail_locked(where);
  }
}

uint64_t OnlineSession::on_lines(void* context, int kind, uint64_t pid, uint64_t tid, const char* data, size_t size) noexcept {
  return guarded(context, "unknown exception in on_lines", [&](OnlineSession& self) {
    if (self.shed_.shed) {
      self.shed_.lines_not_checked += static_cast<uint64_t>(std::count(data, data + size, '\n'));
      return;
    }
    const uint64_t cpu0 = thread_cpu_ns();
    if (!self.feeding_) {
      self.feeding_ = true;
      // The sink sees this process's lines only, and with no exchange no peer's step end comes.
      if (!self.cross_rank_) self.checker_->assume_one_process();
    }
    // Named as the file the lines go to, so a bad line's message points at it.
    const std::string source = std::string(kind == TC_SINK_VAR ? "trace_VAR_" : "trace_API_") + std::to_string(pid) + "_" +
                               std::to_string(tid) + ".log";
    self.checker_->add_lines(source, std::string_view(data, size));
    if (const std::optional<int64_t> t = self.checker_->last_time(source))
      self.newest_time_in_pass_ = std::max(self.newest_time_in_pass_.value_or(*t), *t);
    self.shed_.check_cpu_ns += thread_cpu_ns() - cpu0;
  });
}

uint64_t OnlineSession::on_pass_end(void* context) noexcept {
  return guarded(context, "unknown exception in on_pass_end", [](OnlineSession& self) {
    if (self.shed_.shed) return;
    const uint64_t cpu0 = thread_cpu_ns();
    self.checker_->end_batch();
    // Never waits: the store is the exchange's I/O thread's (cross_rank_exchange.h).
    if (self.cross_rank_) self.check_peer_ends_locked(self.cross_rank_->exchange(self.checker_->current_step()));
    ++self.shed_.passes;
    self.shed_.check_cpu_ns += thread_cpu_ns() - cpu0;
    self.note_lag_locked();
    self.refresh_report_locked(false);
  });
}

// The records of a pass were emitted at most a writer period before it, plus whatever the writer lags
// behind the training; only the lag grows when the writer cannot keep up. Checking is what the sink adds
// to the writer's work, so it is what goes: never the trace, never the training's exit.
void OnlineSession::note_lag_locked() {
  if (!newest_time_in_pass_) return;
  const int64_t lag = monotonic_ns() - *newest_time_in_pass_;
  newest_time_in_pass_.reset();
  if (!first_lag_ns_) first_lag_ns_ = lag;
  const double grown_s = static_cast<double>(lag - *first_lag_ns_) / 1e9;
  if (grown_s <= options_.max_lag_s) return;
  shed_.shed = true;
  shed_.lag_s = grown_s;
  shed_.at_step = checker_->current_step();
  std::fprintf(stderr,
               "traincheck: warning: in-process checking stopped in process %d at step %lld: the trace writer fell %.1f s "
               "behind the training (more than %.1f s); the trace is complete, so check it afterwards with "
               "traincheck-check (summary_%d.json counts what was not checked)\n",
               static_cast<int>(pid_), shed_.at_step ? static_cast<long long>(*shed_.at_step) : -1LL, grown_s, options_.max_lag_s,
               static_cast<int>(pid_));
}

bool OnlineSession::try_add_signatures(const ApiSignatures& more) {
  std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return false;
  checker_->add_signatures(more);
  return true;
}

OnlineShedStats OnlineSession::shed_stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return shed_;
}

uint64_t OnlineSession::on_close(void* context) noexcept {
  auto* self = static_cast<OnlineSession*>(context);
  const uint64_t before = self->errors();
  self->finish();
  return self->errors() - before;
}

// In the fork child, on its writer thread; `context` is the child's copy of the parent's session. No lock
// is taken: a thread of the parent (Python asking for counts) may have held mutex_ at the fork, and the
// copy keeps it held. What is read is never written after construction, the options and the invariants,
// or is written only by a thread holding the GIL, as the forking thread does: the signatures
// (try_add_signatures).
uint64_t OnlineSession::on_fork_child(void* context, void** child_context) noexcept {
  auto* parent = static_cast<OnlineSession*>(context);
  *child_context = nullptr;
  try {
    parent->fork_child_.reset(new OnlineSession(parent->options_, parent->checker_->invariants(), parent->checker_->signatures()));
    *child_context = parent->fork_child_.get();
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "traincheck: warning: online check off in process %d (a fork child): %s\n", static_cast<int>(::getpid()), e.what());
  } catch (...) {
    std::fprintf(stderr, "traincheck: warning: online check off in process %d (a fork child)\n", static_cast<int>(::getpid()));
  }
  return 1;
}

// Throttled as the original's: rewritten when the violations changed and the interval has passed.
void OnlineSession::refresh_report_locked(bool force) {
  const uint64_t violations = checker_->counts().violations;
  const auto now = std::chrono::steady_clock::now();
  if (!force) {
    if (options_.report_interval_s <= 0 || violations == reported_violations_) return;
    if (std::chrono::duration<double>(now - last_report_).count() < options_.report_interval_s) return;
  }
  checker_->write_report(report_path_);
  last_report_ = now;
  reported_violations_ = violations;
}

void OnlineSession::finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (finished_ || ::getpid() != pid_) return;
  finished_ = true;
  try {
    if (shed_.shed) {
      // Checking stopped mid-run: the checks' state is of an earlier moment, so what only the end decides
      // is left undecided (no false verdicts from a partial trace); the exchange just stops.
      if (cross_rank_) cross_rank_->finish();
    } else {
      if (cross_rank_) {  // this rank's last steps out, the peers' in (bounded wait: CrossRankOptions)
        checker_->end_batch();
        check_peer_ends_locked(cross_rank_->finish());
      }
      checker_->end_trace();  // also a batch the writer started but never ended (it should not happen)
    }
    try {  // a report that cannot be written (a link planted under its name) leaves the summary written
      refresh_report_locked(true);
    } catch (const std::exception& e) {
      fail_locked(e.what());
    }
    std::string text;
    append_value_json(text, summary_locked(), JsonStyle::Indented, 2);
    text += '\n';
    replace_output_file(summary_path_, text);
  } catch (const std::exception& e) {
    fail_locked(e.what());
  } catch (...) {
    fail_locked("unknown exception in finish");
  }
}

OnlineCounts OnlineSession::counts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return checker_->counts();
}

Value OnlineSession::summary() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return summary_locked();
}

// The checker's summary, plus what the cross-rank exchange did (docs/formats.md §traincheck-onlinecheck).
Value OnlineSession::summary_locked() const {
  Value summary = checker_->summary();
  auto n = [](uint64_t x) { return Value::integer(static_cast<int64_t>(x)); };
  Object with_shed = summary.as_object();
  with_shed.push_back(Member{intern_key("shed"),
                             make_object({{"shed", Value::boolean(shed_.shed)},
                                          {"lag_s", Value::real(shed_.lag_s)},
                                          {"at_step", shed_.at_step ? Value::integer(*shed_.at_step) : Value()},
                                          {"lines_not_checked", n(shed_.lines_not_checked)},
                                          {"check_cpu_ns", n(shed_.check_cpu_ns)},
                                          {"passes", n(shed_.passes)}})});
  summary = Value::object(std::move(with_shed));
  if (!cross_rank_) return summary;
  const CrossRankStats st = cross_rank_->stats();
  Array peers, lagging;
  for (int p : st.peers) peers.push_back(Value::integer(p));
  for (int p : st.lagging) lagging.push_back(Value::integer(p));
  Object members = summary.as_object();
  members.push_back(Member{intern_key("cross_rank"),
                           make_object({{"rank", st.group ? Value::integer(st.group->rank) : Value()},
                                        {"world_size", st.group ? Value::integer(st.group->world_size) : Value()},
                                        {"mode", Value::string(st.mode)},
                                        {"node", st.node >= 0 ? Value::integer(st.node) : Value()},
                                        {"leader", Value::boolean(st.leader)},
                                        {"peers", Value::array(std::move(peers))},
                                        {"job_store_calls", n(st.job_store_calls)},
                                        {"job_store_bytes", n(st.job_store_bytes)},
                                        {"folds_published", n(st.folds.folds_published)},
                                        {"folds_matched", n(st.folds.folds_matched)},
                                        {"folds_differing", n(st.folds.folds_differing)},
                                        {"references_missing", n(st.folds.references_missing)},
                                        {"steps_published", n(st.steps_published)},
                                        {"bytes_published", n(st.bytes_published)},
                                        {"summaries_received", n(st.summaries_received)},
                                        {"summaries_matched", n(st.summaries_matched)},
                                        {"records_received", n(st.records_received)},
                                        {"store_ops", n(st.store_ops)},
                                        {"store_errors", n(st.store_errors)},
                                        {"steps_skipped", n(st.steps_skipped)},
                                        {"chunks_published", n(st.chunks_published)},
                                        {"chunks_missing", n(st.chunks_missing)},
                                        {"lines_too_large", n(st.lines_too_large)},
                                        {"io_cpu_ns", n(st.io_cpu_ns)},
                                        {"lagging", Value::array(std::move(lagging))},
                                        {"last_error", Value::string(st.last_error)}})});
  return Value::object(std::move(members));
}

uint64_t OnlineSession::errors() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return errors_;
}

std::string OnlineSession::last_error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_error_;
}

}  // namespace traincheck
