// FunctionCoverRelation and FunctionLeadRelation: the order of two APIs' calls on one thread. See the
// header of function_order.cpp (offline) and function_order_online.cpp (online).
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "invariant/precondition.h"
#include "invariant/held_record.h"
#include "invariant/relation.h"

namespace traincheck {

enum class FunctionOrder {
  Cover,  // [A, B]: every call of B is preceded, since the previous B ended, by a complete call of A
  Lead,   // [A, B]: between a call of A and the next call of A, a complete call of B occurs
};

class FunctionOrderRelation final : public Relation {
 public:
  explicit FunctionOrderRelation(FunctionOrder order) : order_(order) {}
  std::string_view name() const override;
  std::vector<Hypothesis> generate(const TraceStore& trace) const override;
  void collect_examples(const TraceStore& trace, Hypothesis& hypothesis) const override;
  std::vector<std::string> precondition_keys_to_skip() const override { return {"function"}; }
  CheckResult check(const TraceStore& trace, const Invariant& invariant, const CheckOptions& options) const override;
  std::unique_ptr<OnlineCheck> make_online_check(const Invariant& invariant,
                                                 const ApiSignatures* signatures = nullptr) const override;
  std::string display_name(const Invariant& invariant) const override;

  // Functions that may take part in a hypothesis: not skipped for analysis, and never more than
  // `kMaxConsecutiveRecords` records of theirs in a row on a thread (a per-step hot API).
  static constexpr size_t kMaxConsecutiveRecords = 4;
  static std::vector<std::string_view> candidate_functions(const TraceStore& trace);

 private:
  FunctionOrder order_;
};

// The online form of FunctionOrderRelation::check for one pair [A, B] (how: function_order_online.cpp).
class FunctionOrderOnlineCheck final : public OnlineCheck {
 public:
  FunctionOrderOnlineCheck(FunctionOrder order, std::string first, std::string second,
                           std::optional<PreconditionGroup> precondition);
  void on_record(const Record& record, std::vector<OnlineViolation>& violations) override;
  bool triggered() const override { return triggered_; }
  OnlineInterest interest() const override;  // the records of A and B
  void on_trace_end(std::vector<OnlineViolation>& violations) override;  // Lead: a thread's only call of A
  void on_records_lost(int64_t process_id, int64_t thread_id) override;   // the thread starts afresh
  // Calls of A or B open now, over all threads (bounded by the nesting depth), for tests.
  size_t open_calls() const;

 private:
  struct Thread {
    // The latest call of the opener function (Cover: B, Lead: A): the window it opens is judged at the
    // next call of the opener.
    HeldRecord opener;       // its pre-record: a violation's second record
    uint64_t opener_id = 0;  // call_key of its func_call_id
    bool opener_closed = false;
    bool opener_precondition = true;  // Lead: the precondition on the opener's pre-record
    // Inner calls (Cover: A, Lead: B) count when they start after this: Cover, the latest end of a call
    // of B (before any: the thread's start); Lead, the end of the opener.
    int64_t window_start = std::numeric_limits<int64_t>::min();
    bool inner_seen = false;  // a complete inner call inside the window
    // Lead, for the end of the trace: calls of A seen on the thread (counted up to 2), and whether a
    // call of B returned after the first of them did (what judges a thread's only call of A).
    int openers = 0;
    bool inner_returned_after_opener = false;
    // Records of the thread were lost since its last call of the opener: the window the next call closes
    // spans the loss, and is not judged (on_records_lost).
    bool after_loss = false;
    std::unordered_map<uint64_t, int64_t> open_inner;  // call_key -> start
    std::unordered_set<uint64_t> open_openers;         // call_keys of calls of the opener not yet returned
  };

  bool precondition_holds(const Record& pre) const;
  void on_opener_pre(Thread& thread, const Record& pre, std::vector<OnlineViolation>& violations);
  void on_opener_return(Thread& thread, const Record& post);
  void on_inner_return(Thread& thread, const Record& post);

  FunctionOrder order_;
  std::string opener_fn_, inner_fn_;  // Cover: B, A; Lead: A, B
  Name opener_name_, inner_name_;     // the same, interned: a record's function is matched by id
  std::optional<PreconditionGroup> precondition_;
  bool triggered_ = false;
  std::map<std::pair<int64_t, int64_t>, Thread> threads_;
  // The thread of the last record: a thread's calls come in runs (nodes of threads_ never move).
  std::pair<int64_t, int64_t> last_thread_key_{};
  Thread* last_thread_ = nullptr;
  Thread& thread_of(const Record& r);
};

// An OnlineCheck that runs several (a chain's pairs) and reports all their violations.
class OnlineCheckChain final : public OnlineCheck {
 public:
  explicit OnlineCheckChain(std::vector<std::unique_ptr<OnlineCheck>> checks) : checks_(std::move(checks)) {}
  void on_record(const Record& record, std::vector<OnlineViolation>& violations) override;
  bool triggered() const override;
  OnlineInterest interest() const override;
  void on_trace_end(std::vector<OnlineViolation>& violations) override;
  void on_records_lost(int64_t process_id, int64_t thread_id) override;
  void feed_lasting_records() override;

 private:
  std::vector<std::unique_ptr<OnlineCheck>> checks_;
};

}  // namespace traincheck
