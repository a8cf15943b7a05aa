// The relation interface: what every relation template (docs/relations.md) implements, and the example and
// hypothesis model inference works on (docs/analysis.md §Inference pipeline).
//
// Adding a relation: cpp/relations/README.md, "Where do I add a relation?". The engine (infer/) and the
// checker (check/) never name a relation.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "invariant/example_groups.h"
#include "invariant/invariant.h"
#include "trace/trace_store.h"

namespace traincheck {

// An example: for each of the hypothesis' groups, the records (indices into `trace`) it consists of.
struct Example {
  const TraceStore* trace = nullptr;
  ExampleGroups groups;  // parallel to Hypothesis::group_names
};
static_assert(sizeof(Example) == 24, "inference holds millions of examples");

struct Hypothesis {
  Invariant invariant;                   // relation, params, text; precondition not yet inferred
  std::vector<std::string> group_names;  // e.g. {"parent_func_call_pre"}
  std::vector<Example> positives;
  std::vector<Example> negatives;
  // Stages in which the hypothesis was observed; non-empty makes the invariant stage-restricted
  // (docs/formats.md §Stage restriction).
  std::vector<std::string> valid_stages;
  // Hypotheses from different traces with equal merge keys are one hypothesis (their examples are
  // concatenated, then Relation::merge refines params). Defaults to the invariant's compact identity; a
  // relation's own key names names by their ids too (Name::id), so that it stays short with long names.
  std::string merge_key;
  // Traces that generated this hypothesis (collect_examples runs on the others).
  std::vector<const TraceStore*> generated_by;
};

struct Violation {
  std::vector<uint32_t> records;  // the records that show it (indices into the checked trace)
};

struct CheckResult {
  bool triggered = false;  // the precondition held at least once
  std::vector<Violation> violations;  // the first CheckOptions::max_violations of them
  size_t violation_count = 0;         // all of them
  bool passed() const { return violation_count == 0; }
  void add_violation(Violation v, size_t max_kept) {
    ++violation_count;
    if (violations.size() < max_kept) violations.push_back(std::move(v));
  }
};

struct CheckOptions {
  bool check_relation_first = false;
  size_t max_violations = 1000;  // per invariant; further violations are counted, not kept
};

// A violation found online. Unlike Violation, which indexes a TraceStore, it carries copies of the
// records that show it: an online check has no store, and the caller's record is gone once on_record
// returns. Copies are cheap (field values share their payloads) and are what failed.log prints; the
// step of a violation is records[0].step.
struct OnlineViolation {
  std::vector<Record> records;
  // Violations counted but not written out: a check that finds more pairs in one step than it writes
  // (ConsistencyOnlineCheck::kWrittenPerStep) reports the rest as one entry with no records, this count
  // and their step. failed.log gets no line for it; the counts, steps and summary do include it.
  uint64_t unwritten = 0;
  int64_t step = 0;
  // Which of its check's invariants it violates (OnlineCheck::members): 0 for a check of one invariant.
  uint32_t member = 0;
};

// Online checking: records arrive one at a time, while training runs, and a check keeps only bounded
// state (no store, no history beyond what its invariant needs).
//
// Delivery contract: every record is offered (a check ignores what it does not need). The records of
// one thread come in their file's order (pre before post, nested calls inside); records of different
// files (e.g. trace_API_* and trace_VAR_*) are merged by time, as the original's min_read_time gate
// does (docs/analysis.md §Online check). Feeding a finished trace's TraceStore::records() in order satisfies
// it. Which records a check needs, so an online checker can dispatch a record to the few checks that care
// with one hash lookup. `all_records` (the default) offers it every record.
struct OnlineInterest {
  bool all_records = true;
  std::vector<std::string> functions;  // API records whose `function` is one of these
  std::vector<std::string> var_types;  // state records whose `var_type` is one of these
  // When set: of those state records, the check acts only on the ones at which this attribute starts a
  // new state (var_state.h: each variable's first value, then each change), and ignores the rest. A
  // replay over a stored trace feeds only those, from the store's histories (relations/replay_check.h);
  // live, every state record of the types comes, and the check tells the changes itself.
  std::string var_attribute;
  // When set: of those state records, only this variable's matter (a replay feeds only its history).
  std::string var_name;
  // Cross-rank checking (check/online/cross_rank_exchange.h): the check compares variable instances across
  // processes, so the step ends of other ranks' instances of `var_types` are offered to it too
  // (on_peer_step_end). `peer_fields`: the flattened keys it reads from those records, besides their
  // identity (process, var name and type, step, stage, rank); peers send only these.
  bool peer_step_ends = false;
  std::vector<std::string> peer_fields;
};

class OnlineCheck {
 public:
  virtual ~OnlineCheck() = default;
  virtual void on_record(const Record& record, std::vector<OnlineViolation>& violations) = 0;
  virtual OnlineInterest interest() const { return {}; }
  // Whether the invariant's precondition held at least once so far (offline: CheckResult::triggered).
  virtual bool triggered() const { return false; }
  // How many invariants this check judges: one, or several when Relation::make_online_checks gave one
  // check the invariants that share their per-record work (each violation names its member). Member m's
  // triggered(): member_triggered(m).
  virtual size_t members() const { return 1; }
  virtual bool member_triggered(size_t member) const { return triggered(); }
  // The trace has ended: no record follows (in-process, the process that wrote it is exiting). Judges
  // what only the end of the trace decides, as the offline check does on a finished trace. Called at
  // most once, after every record. The default: nothing waits for the end.
  virtual void on_trace_end(std::vector<OnlineViolation>& violations) {}
  // Records of thread (process_id, thread_id) were lost here (a damaged line, lines its recorder could
  // not write: docs/formats.md §Damaged and incomplete traces). What the thread has open now (calls,
  // windows between calls) spans the loss and is not judged: the check forgets it, so its verdicts are
  // those of the records it has, never a confident guess about the ones it lacks. Comes in the records'
  // order, online and replayed offline alike. The default: nothing is held per thread.
  virtual void on_records_lost(int64_t process_id, int64_t thread_id) {}
  // Another rank's instance ended a step with this record (its last state record of that step, sent
  // through the job's store): only for checks whose interest asks for peer_step_ends. A peer's record is
  // compared with this process's instances, never with another peer's (that rank compares its own).
  virtual void on_peer_step_end(const Record& record, std::vector<OnlineViolation>& violations) {}
  // Whether a peer's step whose summary has this process's digest for the step (the same variables with
  // the same contents, the ranks' own identities aside: check/online/cross_rank_exchange.h) can be judged
  // without its records: nothing it compares could then differ. Asked of checks with peer_step_ends.
  virtual bool judges_peer_steps_by_digest() const { return false; }
  // Such a step of the peer process `process_id`, whose records were not sent: what the check would have
  // learned from them (their pairs admitted, their instances' histories), without a violation.
  virtual void on_peer_step_matched(int64_t step, int64_t process_id) {}
  // The driver's promise that every record it feeds stays valid, at its address, as long as the check
  // lives (replay_check feeds the stored trace's records): the check may keep pointers where it would
  // keep copies (HeldRecord). Call before the first record.
  virtual void feed_lasting_records() { lasting_records_ = true; }
  // Whether every verdict this check can reach pairs records of two different processes. Where all
  // records come from one process and no peer step end will come (in-process, with no cross-rank
  // exchange), such a check can find nothing, and the online checker does not feed it
  // (OnlineChecker::assume_one_process): its records are then skipped unparsed.
  virtual bool needs_other_processes() const { return false; }

 protected:
  bool lasting_records_ = false;  // feed_lasting_records was called
};

// What checking an invariant needs the collector to record about the APIs it names, beyond their calls
// (the selective plan, relations/selective_plan.h, turns it into instr_opts.json; docs/collection.md §Selective instrumentation).
struct RecordNeeds {
  bool arguments = false;      // every argument of each API the invariant names
  bool return_values = false;  // the return value of each
  // Variable types whose changes inside the calls of the invariant's first API are recorded
  // (APIContain's var-change children).
  std::vector<std::string> var_types_in_first_api;
  // (API, variable type): APIs the invariant does not name whose calls are recorded with the changes of
  // that variable type inside them (GradientReset: the zero_grad calls that reset gradients in place).
  std::vector<std::pair<std::string, std::string>> var_types_in_apis;
};

class Relation {
 public:
  virtual ~Relation() = default;
  virtual std::string_view name() const = 0;
  // What its checks read from the records, besides each named API's calls and what the params and the
  // precondition ask for (constrained arguments, context managers: the plan adds those for every
  // relation). The default: nothing more.
  virtual RecordNeeds record_needs(const Invariant& invariant) const { return {}; }

  // Hypotheses (with this trace's examples) found in one trace.
  virtual std::vector<Hypothesis> generate(const TraceStore& trace) const = 0;
  // Adds examples of an existing hypothesis from a trace that did not generate it.
  virtual void collect_examples(const TraceStore& trace, Hypothesis& hypothesis) const = 0;
  // Folds `other` (same merge key, another trace) into `into`. The default concatenates examples and
  // unions valid stages.
  virtual void merge(Hypothesis& into, Hypothesis&& other) const;
  // After merging across traces and before pruning: folds hypotheses of this relation that turned out
  // to be one (APIContain's per-stage hypotheses whose argument constraints agree). Must keep the
  // remaining hypotheses in their order. The default folds nothing.
  virtual void combine(std::vector<Hypothesis>& hypotheses) const {}
  // Field-name substrings the precondition learner must not use for this relation.
  virtual std::vector<std::string> precondition_keys_to_skip() const { return {}; }
  // Fields whose `consistent` clause the learner keeps whenever every positive supports it, even if no
  // negative of the training runs needs it.
  virtual std::vector<std::string> precondition_consistent_keys_to_keep() const { return {}; }

  virtual CheckResult check(const TraceStore& trace, const Invariant& invariant, const CheckOptions& options) const = 0;
  // nullptr: the relation has no online check. `signatures` (may be null; must outlive the check) bind
  // positional arguments to names as the offline check does with the trace folder's signatures: online
  // there is no TraceStore to get them from.
  virtual std::unique_ptr<OnlineCheck> make_online_check(const Invariant& invariant,
                                                         const ApiSignatures* signatures = nullptr) const {
    return nullptr;
  }
  // The online checks of several invariants of this relation, each with the positions in `invariants`
  // of the invariants it judges (its members, in member order). The default: make_online_check for each.
  // A relation whose invariants repeat the same work per record (ConsistencyRelation: the same variables'
  // step ends) gives one check all the invariants that share it, so the work is done once per record,
  // not once per invariant (docs/README.md §Rules of the hot path).
  struct OnlineCheckOf {
    std::unique_ptr<OnlineCheck> check;
    std::vector<size_t> members;
  };
  virtual std::vector<OnlineCheckOf> make_online_checks(const std::vector<const Invariant*>& invariants,
                                                        const ApiSignatures* signatures = nullptr) const;

  // Human label for reports (docs/formats.md §report.html); empty: use text_description.
  virtual std::string display_name(const Invariant& invariant) const { return {}; }

  // Whether the invariant states how a library is implemented (which functions its functions call, with
  // which arguments, in which order), which a new release may change, rather than what training means.
  // A vetted pack records the library versions such an invariant held on (Invariant::vetted_on), and a
  // run on another version does not check it (invariant/version_gate.h). The default: it names a function.
  virtual bool version_bound(const Invariant& invariant) const { return !named_apis(invariant).empty(); }
};

// An invariant's label wherever one is shown or written (failed.log's display_name, the summaries,
// report.html), offline and online: its relation's display name, else its text_description. relation
// may be null (then text_description).
std::string invariant_label(const Relation* relation, const Invariant& invariant);

}  // namespace traincheck
