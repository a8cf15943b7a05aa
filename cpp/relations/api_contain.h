// APIContainRelation: see the header of api_contain.cpp (offline) and api_contain_online.cpp (online).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "invariant/held_record.h"
#include "invariant/precondition.h"
#include "invariant/relation.h"
#include "relations/var_instance_key.h"

namespace traincheck {

class ApiContainRelation final : public Relation {
 public:
  std::string_view name() const override { return "APIContainRelation"; }
  RecordNeeds record_needs(const Invariant& invariant) const override;  // a var-change child's type
  // Its precondition group, evaluated on the parent's pre-record (offline and online).
  static constexpr std::string_view kGroup = "parent_func_call_pre";
  std::vector<Hypothesis> generate(const TraceStore& trace) const override;
  void collect_examples(const TraceStore& trace, Hypothesis& hypothesis) const override;
  void merge(Hypothesis& into, Hypothesis&& other) const override;
  void combine(std::vector<Hypothesis>& hypotheses) const override;
  CheckResult check(const TraceStore& trace, const Invariant& invariant, const CheckOptions& options) const override;
  std::unique_ptr<OnlineCheck> make_online_check(const Invariant& invariant,
                                                 const ApiSignatures* signatures = nullptr) const override;
  std::string display_name(const Invariant& invariant) const override;

  // Whether a parent call is judged at all: not one made under torch.compile (`"compiled": true`,
  // record/event_format.h kUnderCompiler), whose callees may have run as compiled graphs, unrecorded.
  static bool judges_parent(const Record& pre);

  // Whether `call` contains an event matching `child` (an APIParam, VarTypeParam or VarNameParam).
  static bool contains(const TraceStore& trace, const CallEvent& call, const Param& child);

  // The matching rules of `contains`, shared with the online check so both agree by construction.
  // An API call matches an APIParam child by its pre-record (name, argument values) and its outcome
  // (an exception post matches only a child with `exception` set).
  static bool api_call_matches(const Param& child, const Record& pre, const ApiSignatures& signatures);
  static bool api_outcome_matches(const Param& child, bool raised);
  // A change of `var_type`/`var_name`'s attribute `attr` from `before` to `after` matches a
  // VarTypeParam or VarNameParam child (pre/post values, generalised tokens included).
  static bool var_change_matches(const Param& child, std::string_view var_type, std::string_view var_name,
                                 std::string_view attr, const Value& before, const Value& after);
};

// The online form of ApiContainRelation::check (how it works: api_contain_online.cpp).
class ApiContainOnlineCheck final : public OnlineCheck {
 public:
  // `signatures` may be null (positional arguments keep their index as name); it must outlive the check.
  ApiContainOnlineCheck(const Invariant& invariant, const ApiSignatures* signatures);
  void on_record(const Record& record, std::vector<OnlineViolation>& violations) override;
  // The thread's open calls span the loss: none of them is judged.
  void on_records_lost(int64_t process_id, int64_t thread_id) override { threads_.erase({process_id, thread_id}); }

  // Whether the precondition held for a parent call that closed (offline: CheckResult::triggered).
  bool triggered() const override { return triggered_; }
  // The parent's records, an API child's records, or the state records of a var child's type.
  OnlineInterest interest() const override;
  // The state held now, for tests and memory reports: open calls tracked over all threads, threads
  // with open calls, variable instances whose last value is remembered.
  size_t open_calls() const;
  size_t tracked_threads() const { return threads_.size(); }
  size_t tracked_vars() const;

 private:
  struct OpenCall {
    Value id;                  // func_call_id (shares the record's payload)
    int64_t start = 0;
    bool parent = false;       // a parent call whose precondition held
    bool child = false;        // an API child call whose name and arguments match
    int64_t first_match = 0;   // parent: earliest end of a counted API child / time of a counted var change
    HeldRecord pre;             // parent: its pre-record, reported if it closes without the child
  };
  enum class ChildKind { None, Api, Var };

  bool precondition_holds(const Record& pre) const;
  void on_pre(const Record& r, bool is_parent, bool is_child);
  void on_post(const Record& r, std::vector<OnlineViolation>& violations);
  void on_state(const Record& r);
  // A VarNameParam child whose variable this process has not recorded yet: its parents are not judged.
  bool names_unseen_var(int64_t pid) const;

  bool valid_ = false;
  bool triggered_ = false;
  Name parent_name_;  // compared by id with each record's function
  Param child_;
  ChildKind child_kind_ = ChildKind::None;
  KeyId attr_key_ = kNoKey;  // "attributes.<attr>" of a var child
  std::optional<PreconditionGroup> precondition_;
  const ApiSignatures* signatures_;
  std::map<std::pair<int64_t, int64_t>, std::vector<OpenCall>> threads_;  // (pid, tid) -> open calls, outermost first
  // A var child's variables (of its type) -> the attribute's last value.
  std::unordered_map<VarInstanceKey, Value, VarInstanceKeyHash> last_values_;
};

}  // namespace traincheck
