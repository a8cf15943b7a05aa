// The in-process online checker behind a record sink (record/record_sink.h): the recorder's writer
// thread hands it every trace line it formats; the session checks them with an OnlineChecker (one batch
// per writer pass), appends violations to failed.log at once, refreshes report.html at most every
// `report_interval_s` when something changed, and writes the final report and summary_<pid>.json when
// the recorder closes the sink at shutdown.
//
// It never throws through the sink: an exception in a callback is caught and returned as an error count
// (the recorder logs it). The first process to create <out>/invariants.json owns report.html; other
// processes of the run (DDP ranks, fork children) write report_<pid>.html, and all of them append to
// failed.log. A fork child (a DataLoader worker) checks its own records with a session of its own, made
// from the parent's invariants on the child's writer thread (on_fork_child); finish() in a process other
// than the session's does nothing.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "check/online/cross_rank_exchange.h"
#include "check/online/online_checker.h"
#include "check/online/violation_alert.h"
#include "invariant/version_gate.h"
#include "record/record_sink.h"

namespace traincheck {

// api_signatures.json's content (or an entry set of it) parsed; "" is none. Throws TraceReadError.
ApiSignatures parse_signatures_json(const std::string& text);

struct OnlineSessionOptions {
  std::vector<std::string> invariant_files;
  std::string signatures_json;  // api_signatures.json's content for the wrapped APIs ("": none)
  std::string output_dir;
  double report_interval_s = 10.0;  // <= 0: report.html only at finish
  // Shedding (docs/README.md §Rules of the hot path, rule 7): once the records the writer hands over are this much older than
  // they were at the first pass (the writer has fallen behind the training by that much), checking stops
  // for the rest of the run, with a warning and counts in summary_<pid>.json; the trace goes on.
  double max_lag_s = 10.0;
  // An invariant's first violation (violation_alert.h): Warn and Raise print it on stderr as it is found;
  // every action queues it for take_alerts() (Raise is the training thread's to carry out).
  ViolationAction on_violation = ViolationAction::Warn;
  // The versions of the libraries the training process runs (invariant/version_gate.h).
  LibraryVersions library_versions = {};
};

// What shedding did (summary_<pid>.json "shed").
struct OnlineShedStats {
  bool shed = false;
  double lag_s = 0;                 // the writer's lag behind the training when checking stopped
  std::optional<int64_t> at_step;   // the checker's step then
  uint64_t lines_not_checked = 0;   // lines handed over after that
  uint64_t check_cpu_ns = 0;        // writer-thread CPU spent checking (lines, passes), shed or not
  uint64_t passes = 0;              // writer passes checked
};

class OnlineSession {
 public:
  // Loads the invariants and opens the outputs. Throws (InvariantFormatError, TraceReadError for bad
  // signatures, std::runtime_error for files) with a message naming the file.
  explicit OnlineSession(OnlineSessionOptions options);

  // The sink to install in the recorder; its context is this session, which must outlive it.
  TcRecordSink sink();

  // Cross-rank checking in-process (check/online/cross_rank_exchange.h): this process's step ends of the
  // variables its invariants compare across ranks go to `store`, and its peers' come back to its checker.
  // False (and the store unused) when no loaded invariant compares across ranks. Call before the sink
  // is installed (without it, the first lines idle the checks that only pair records of two processes).
  // A fork child's session never exchanges (it is not a rank).
  bool enable_cross_rank(std::unique_ptr<PeerStore> store, CrossRankOptions options);
  std::optional<CrossRankStats> cross_rank_stats() const;

  // Signatures of APIs wrapped after the session started (modules imported later): checks bind their
  // arguments by name from the next record on. Never waits for the lock: false when the writer holds it,
  // and the caller (holding Python's GIL, which the writer's I/O thread may be waiting for) retries
  // without the GIL. Called only with the GIL held, as every fork from Python is: a fork never copies a
  // half-merged table into a child (on_fork_child reads it unlocked).
  bool try_add_signatures(const ApiSignatures& more);

  // The first violations of invariants found since the last call, oldest first (at most kMaxQueuedAlerts
  // wait; later ones are only printed and logged). Takes its own lock, which the writer holds only to
  // append: safe to call with Python's GIL held. alerts_waiting() is the lock-free check before it.
  static constexpr size_t kMaxQueuedAlerts = 1000;
  std::vector<ViolationAlert> take_alerts();
  bool alerts_waiting() const { return alerts_waiting_.load(std::memory_order_acquire); }

  // Thread-safe snapshots.
  OnlineCounts counts() const;
  OnlineShedStats shed_stats() const;
  Value summary() const;
  uint64_t errors() const;  // exceptions caught in sink callbacks and report writes
  std::string last_error() const;
  const std::string& report_path() const { return report_path_; }
  const std::string& summary_path() const { return summary_path_; }

  // The end of this process's records (the recorder closes the sink at shutdown): judges what only the
  // end of the trace decides (OnlineChecker::end_trace), writes report.html and summary_<pid>.json.
  // Idempotent; a no-op in a process other than the one that created the session. Never throws
  // (failures count as errors).
  void finish();

 private:
  // A fork child's session: the parent's options and loaded invariants, its own checker and outputs.
  OnlineSession(OnlineSessionOptions options, std::vector<Invariant> invariants, ApiSignatures signatures);
  void open_outputs(std::vector<Invariant> invariants, ApiSignatures signatures);
  static uint64_t on_lines(void* context, int kind, uint64_t pid, uint64_t tid, const char* data, size_t size) noexcept;
  static uint64_t on_pass_end(void* context) noexcept;
  static uint64_t on_close(void* context) noexcept;
  static uint64_t on_fork_child(void* context, void** child_context) noexcept;
  template <typename Body>
  static uint64_t guarded(void* context, const char* where, Body&& body) noexcept;
  void refresh_report_locked(bool force);
  void check_peer_ends_locked(const std::vector<Record>& ends);
  Value summary_locked() const;
  uint64_t fail_locked(const char* what);

  OnlineSessionOptions options_;
  mutable std::mutex mutex_;  // the writer thread feeds; Python asks for counts
  std::unique_ptr<OnlineChecker> checker_;
  std::string report_path_, summary_path_;
  pid_t pid_;
  bool finished_ = false;
  std::chrono::steady_clock::time_point last_report_;
  uint64_t reported_violations_ = 0;
  uint64_t errors_ = 0;
  std::string last_error_;
  std::unique_ptr<CrossRankExchange> cross_rank_;
  // Whether lines have come: the first decide, with no cross-rank exchange enabled before them, that
  // this process's records are all there will be (OnlineChecker::assume_one_process).
  bool feeding_ = false;
  // Shedding: the newest record time of this pass, the lag at the first pass (the records' clock may
  // not be this process's: a lag is measured from it).
  void note_lag_locked();
  void on_first_violation(const OnlineInvariantState& state);  // on the writer thread, mutex_ held
  std::mutex alerts_mutex_;
  std::vector<ViolationAlert> alerts_;
  std::atomic<bool> alerts_waiting_{false};
  std::optional<int64_t> newest_time_in_pass_;
  std::optional<int64_t> first_lag_ns_;
  OnlineShedStats shed_;
  // In a fork child's copy of the parent's session: the child's own (a grandchild's is the child's).
  std::unique_ptr<OnlineSession> fork_child_;
};

}  // namespace traincheck
