// The online checker's dispatcher: every invariant's online check, and which records go to which.
//
// Each relation makes the checks of its invariants (Relation::make_online_checks; a check may judge
// several invariants, its members). Each check says which records it needs (OnlineInterest), so a record
// that no check names costs one hash lookup on its function (API records) or var_type (state records).
// Records are offered with their thread's live context managers when a precondition names one
// (online_context_managers.h), to the checks in the order of their first invariant, and what a check
// finds goes to the violation log at once, under its member's invariant.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "check/online/online_context_managers.h"
#include "check/online/violation_log.h"
#include "invariant/relation.h"
#include "trace/api_signatures.h"

namespace traincheck {

class CheckDispatcher {
 public:
  // `states` (one per invariant, parallel to `invariants`) get their relation, label, check and member;
  // `signatures` must outlive the dispatcher (the checks point into it). Both are the caller's. An
  // invariant `skipped` marks (parallel to `invariants`; empty: none) gets no check, as one whose relation
  // has no online check.
  CheckDispatcher(const std::vector<Invariant>& invariants, const ApiSignatures* signatures,
                  std::vector<OnlineInvariantState>& states, ViolationLog& log,
                  const std::vector<bool>& skipped = {});

  // Whether some check (or a context manager a precondition names) needs the record.
  bool wants(const Record& record) const;
  // Whether a check wants every record (then no line can be skipped unparsed).
  bool wants_every_record() const { return !all_records_.empty(); }
  // Whether a raw "function" or "var_type" value names something wanted (line_feed.h's prefilter).
  bool wants_name(std::string_view function_or_var_type) const {
    return by_function_.find(function_or_var_type) != by_function_.end() ||
           by_var_type_.find(function_or_var_type) != by_var_type_.end() || is_wanted_exit(function_or_var_type);
  }

  // Offers a wanted record to the checks that need it (the caller guarantees relation.h's delivery order).
  void dispatch(const Record& record);
  // Another rank's step end (a record of a peer var type): offered to the checks that asked for them.
  void dispatch_peer_step_end(const Record& record);
  // A peer's step that matched this process's by digest (OnlineCheck::on_peer_step_matched).
  void dispatch_peer_step_matched(int64_t step, int64_t process_id);
  // Whether every check that takes peers' step ends judges a matched step without its records (and there
  // is one): then the exchange may skip fetching such steps.
  bool peer_steps_by_digest() const { return peer_steps_by_digest_; }
  // The trace has ended: every check judges what only the end decides (OnlineCheck::on_trace_end).
  void end_trace();
  // Records of a thread were lost here: every check forgets what spans the loss (OnlineCheck::on_records_lost).
  void records_lost(int64_t process_id, int64_t thread_id);

  // Cross-rank checking (check/online/cross_rank_exchange.h): the var types of the checks that compare
  // instances across processes (empty: nothing to exchange), and the fields they read from a peer's records.
  const std::vector<std::string>& peer_var_types() const { return peer_var_types_; }
  const std::set<std::string>& peer_fields() const { return peer_fields_; }
  // Called with each of this process's records of a peer var type as it is dispatched.
  void set_peer_state_observer(std::function<void(const Record&)> observer) { peer_state_observer_ = std::move(observer); }

  uint64_t dispatched() const { return dispatched_; }

  // Every record to come is one process's, and no peer step end will come (in-process, no cross-rank
  // exchange): the checks that can only pair records of two processes (OnlineCheck::needs_other_processes)
  // are fed nothing from now on, so their records are skipped unparsed. Their invariants stay checked and
  // untriggered, as they would end anyway. Call before the first record. Returns how many invariants idle.
  size_t assume_one_process();
  size_t idle_invariants() const { return idle_invariants_; }

 private:
  // A check and the invariants it judges (states indices, in member order).
  struct CheckEntry {
    std::unique_ptr<OnlineCheck> check;
    std::vector<uint32_t> members;
  };
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using Table = std::unordered_map<std::string, std::vector<uint32_t>, StringHash, std::equal_to<>>;  // -> checks_ indices

  // One Relation::make_online_checks call per relation, the checks in their first invariant's order.
  void make_checks(const std::vector<Invariant>& invariants, const ApiSignatures* signatures,
                   const std::vector<bool>& skipped);
  void index_checks();
  // Reports what the check put in found_ (each violation to its member's state), and clears it.
  void report_found(const CheckEntry& entry);

  std::vector<OnlineInvariantState>& states_;
  ViolationLog& log_;
  OnlineContextManagers context_managers_;  // those the invariants' preconditions name
  // With context managers to follow, every class's __exit__ is wanted: a subclass's closes a manager's span.
  bool is_wanted_exit(std::string_view function) const { return !context_managers_.empty() && function.ends_with(".__exit__"); }
  Record enriched_;                         // scratch: a record with its live context managers
  std::vector<CheckEntry> checks_;
  std::vector<bool> idle_;  // per check: fed nothing (assume_one_process)
  size_t idle_invariants_ = 0;
  Table by_function_, by_var_type_;
  std::vector<uint32_t> all_records_;  // checks that want every record
  Table by_peer_var_type_;             // checks that take other ranks' step ends, by var type
  std::vector<std::string> peer_var_types_;
  std::vector<uint32_t> peer_checks_;  // the checks in by_peer_var_type_, each once
  bool peer_steps_by_digest_ = false;
  std::set<std::string> peer_fields_;
  std::function<void(const Record&)> peer_state_observer_;
  std::vector<OnlineViolation> found_;  // scratch
  uint64_t dispatched_ = 0;
};

}  // namespace traincheck
