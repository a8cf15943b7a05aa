// The online checker (docs/analysis.md §Online check): invariants checked record by record while training
// runs, with bounded memory. Used in-process by the recorder's sink (online_session.h) and by
// traincheck-onlinecheck (online_command.h), which tails trace files.
//
// Three parts, each in its own file: the line feed (line_feed.h: JSON lines to records, prefiltered and
// merged by time), the dispatcher (check_dispatcher.h: each invariant's check, and which records go to
// which) and the violation log (violation_log.h: failed.log as violations are found, per-invariant
// state). This class joins them, and turns their state into counts, summaries and the online report.
//
// Memory: per invariant its check's own bounded state, at most `max_steps_kept` violating steps and
// `max_samples_kept` sample records; records of a batch (add_lines .. end_batch) that some check needs.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "check/online/check_dispatcher.h"
#include "check/online/line_feed.h"
#include "check/online/process_summaries.h"
#include "check/online/violation_log.h"
#include "check/violation_summary.h"
#include "invariant/relation.h"
#include "invariant/version_gate.h"
#include "trace/api_signatures.h"
#include "trace/lost_records.h"

namespace traincheck {

struct OnlineCheckerOptions {
  std::string output_dir;             // created if needed; failed.log is appended there
  bool write_invariants_file = true;  // <out>/invariants.json (the invariants as loaded)
  size_t max_steps_kept = 500;        // violating steps per invariant (the original keeps 500)
  size_t max_samples_kept = 8;        // sample records per invariant, for the report
  // The versions of the libraries the checked run uses: invariants vetted on other versions are not
  // checked (invariant/version_gate.h). Empty: every invariant is checked.
  LibraryVersions library_versions = {};
};

struct OnlineCounts {
  uint64_t violations = 0;
  size_t invariants_violated = 0;
  size_t triggered = 0;    // checked invariants whose precondition held at least once
  size_t checked = 0;      // invariants with an online check
  size_t not_checked = 0;  // no online check: its relation has none, is not registered, or version_skipped
  size_t version_skipped = 0;  // of those, vetted on other library versions (version_note says which)
  uint64_t lines = 0;      // non-blank lines given to add_lines
  uint64_t records = 0;    // records parsed (lines that may concern a check) or offered to check_record
  uint64_t dispatched = 0;  // records some check needed
  uint64_t bad_lines = 0;   // lines that did not parse (recent_errors() names them)
  uint64_t records_lost = 0;  // bad lines, and lines the recorders' logs say they could not write
  uint64_t write_errors = 0;  // failed.log appends that failed
  uint64_t unwritten_violations = 0;  // counted in `violations`, no failed.log line (a check's per-step cap)
  std::optional<int64_t> current_step;  // the highest meta_vars.step seen
  std::string current_stage;           // the stage of the last record seen
};

class OnlineChecker {
 public:
  // Opens (appends to) <out>/failed.log and writes <out>/invariants.json. Throws std::runtime_error
  // naming the file when the folder or a file cannot be written.
  OnlineChecker(std::vector<Invariant> invariants, ApiSignatures signatures, OnlineCheckerOptions options);
  ~OnlineChecker();
  OnlineChecker(const OnlineChecker&) = delete;
  OnlineChecker& operator=(const OnlineChecker&) = delete;

  // Invariants of every file, duplicates (same identity) kept once, as traincheck-check merges -i files.
  // Throws InvariantFormatError.
  static std::vector<Invariant> load_invariants(const std::vector<std::string>& files);

  // Adds signatures found later (a collect run writes api_signatures.json before its script runs, each of
  // its processes merging its own in); checks use them from the next record on.
  void add_signatures(const ApiSignatures& more) { signatures_->merge(more); }

  // Checks one record now (the caller guarantees the delivery order of relation.h).
  void check_record(const Record& record);

  // Parses complete JSON lines of `source` (a file name, for messages and line numbers) with the
  // trace reader's line parser. Records some check needs are kept until end_batch(), which checks them
  // in time order (stable: each source's order is kept): a batch is one pass over every stream, so
  // records of different files are merged by time within it. A bad line is counted, not thrown.
  void add_lines(std::string_view source, std::string_view text);
  // With a `horizon` (a file was read only in part, its backlog chunk by chunk), records later than it
  // stay pending for a later batch, so that records of different files are still checked in time order.
  void end_batch(std::optional<int64_t> horizon = std::nullopt);
  // The trace has ended (in-process: the process is exiting): checks the pending batch, then lets every
  // check judge what only the end decides (OnlineCheck::on_trace_end), reporting as records do. Once;
  // later calls, and records given after it, change nothing.
  void end_trace();
  // Cross-rank checking (check/online/cross_rank_exchange.h). What other ranks must send: the var types of the
  // checks that compare instances across processes (empty: nothing to exchange), and the fields those
  // checks read from a peer's records.
  const std::vector<std::string>& peer_var_types() const { return dispatcher_->peer_var_types(); }
  const std::set<std::string>& peer_fields() const { return dispatcher_->peer_fields(); }
  // Called once per invariant, with its state, when its first violation has been reported (written to
  // failed.log, or counted): what online_session.h tells the training process about.
  void set_first_violation_observer(std::function<void(const OnlineInvariantState&)> observer) {
    log_->set_first_violation_observer(std::move(observer));
  }
  // Called with each of this process's records of a peer var type as it is checked (in check order).
  void set_peer_state_observer(std::function<void(const Record&)> observer) {
    dispatcher_->set_peer_state_observer(std::move(observer));
  }
  // Another rank's step end (a record of a peer var type): offered to the checks that asked for them.
  void check_peer_step_end(const Record& record);
  // Another rank's step whose summary had this process's digest (cross_rank_exchange.h): judged without
  // its records. Only when peer_steps_by_digest().
  void peer_step_matched(int64_t step, int64_t process_id);
  bool peer_steps_by_digest() const { return dispatcher_->peer_steps_by_digest(); }
  // Every record to come is one process's and no peer step end will come: the checks that only pair
  // records of two processes are fed nothing (CheckDispatcher::assume_one_process). Before the first
  // record; returns how many invariants idle.
  size_t assume_one_process() { return dispatcher_->assume_one_process(); }
  // The highest meta_vars.step of this process's records seen so far.
  std::optional<int64_t> current_step() const { return current_step_; }

  // The time of the last line of `source` given to add_lines that was a valid record; nullopt if none.
  std::optional<int64_t> last_time(std::string_view source) const { return feed_->last_time(source); }

  // Lines the recorder of a trace file (named without its folder) could not write, before its line
  // `line`, from the trace folder's recorder log (trace/lost_records.h): where the feed reaches that line,
  // every check forgets what the thread has open, as at a bad line. `placed` false: lost at no known place
  // (counted only).
  void expect_loss(const LostRecords& loss, const std::string& file);
  // "" or one line: the verdicts were reached on an incomplete trace (records lost, the files that lost them).
  std::string incomplete_trace_note() const;
  // The trace files have ended (their recorders' logs are written): lines lost at a file's end count, and
  // are losses after its last record. end_trace() does this first.
  void end_of_sources();

  OnlineCounts counts() const;
  const std::vector<OnlineInvariantState>& states() const { return states_; }
  const std::vector<Invariant>& invariants() const { return invariants_; }  // as loaded
  // "" or one line: how many invariants this run's library versions leave unchecked, and why.
  const std::string& version_note() const { return version_gate_.note; }
  const ApiSignatures& signatures() const { return *signatures_; }
  const std::string& output_dir() const { return options_.output_dir; }
  std::string failed_log_path() const;
  // The last bad-line messages ("source:line: what"), at most 20.
  const std::vector<std::string>& recent_errors() const { return feed_->recent_errors(); }

  // report.html in online mode (docs/formats.md §report.html). Throws std::runtime_error naming the file on
  // failure.
  std::string render_report() const;
  // Per violated invariant: label, first and last step, count; sorted by first step.
  std::vector<ViolationSummaryRow> violation_summary() const;
  // The same rows with their invariants' identities, unsorted: what summary() writes for merging
  // across the processes of a run (process_summaries.h).
  std::vector<ProcessViolationRow> process_violation_rows() const;
  void write_report(const std::string& path) const;
  // <out>/violations_summary.json of violation_summary() (traincheck-check's format), written at stop.
  void write_violations_summary() const;
  // Why a checked invariant could not be evaluated on what this process recorded, "" when it could be or
  // was: its check reads only variable states and no record had their type ("no torch.nn.Parameter state
  // recorded": no model tracked), or none was at a training step ("no training step found"). Only for an
  // invariant not triggered.
  std::string unevaluated_reason(const OnlineInvariantState& state) const;
  // Counts plus the identities of violated and triggered invariants (so several processes' summaries
  // can be merged): {"violations", "invariants_violated", "triggered", "checked", "not_checked",
  // "version_skipped", "version_note" ("" when none is), "unevaluated" ({identity: reason}), "records", "bad_lines", "write_errors",
  // "violated_invariants", "triggered_invariants", "failed_log"}.
  Value summary() const;

 private:
  void note_progress(const Record& r);

  OnlineCheckerOptions options_;
  std::vector<Invariant> invariants_;
  std::unique_ptr<ApiSignatures> signatures_;  // the checks point into it
  std::vector<OnlineInvariantState> states_;   // parallel to invariants_
  VersionGate version_gate_;                   // the invariants this run's library versions leave unchecked
  std::unique_ptr<ViolationLog> log_;
  std::unique_ptr<CheckDispatcher> dispatcher_;
  std::unique_ptr<LineFeed> feed_;
  uint64_t records_ = 0;                       // records parsed or offered (OnlineCounts::records)
  uint64_t unplaced_losses_ = 0;               // lines lost at no known place (expect_loss)
  std::vector<Name> var_types_seen_;           // of the state records parsed or offered, first seen first
  std::optional<int64_t> current_step_;
  std::string current_stage_;
  bool ended_ = false;  // end_trace() ran
};

}  // namespace traincheck
