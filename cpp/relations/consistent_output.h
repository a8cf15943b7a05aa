// ConsistentOutputRelation: see the header of consistent_output.cpp (offline) and
// consistent_output_online.cpp (online).
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "invariant/precondition.h"
#include "invariant/relation.h"

namespace traincheck {

class ConsistentOutputRelation final : public Relation {
 public:
  std::string_view name() const override { return "ConsistentOutputRelation"; }
  std::vector<Hypothesis> generate(const TraceStore& trace) const override;
  void collect_examples(const TraceStore& trace, Hypothesis& hypothesis) const override;
  CheckResult check(const TraceStore& trace, const Invariant& invariant, const CheckOptions& options) const override;
  std::unique_ptr<OnlineCheck> make_online_check(const Invariant& invariant,
                                                 const ApiSignatures* signatures = nullptr) const override;
  std::string display_name(const Invariant& invariant) const override;

  // The tensor payloads ({attr: value}) of a post-record's return_values: the single value or the
  // elements of a tuple whose type names a tensor (torch.*Tensor*) or a Parameter. Empty when the
  // record has no return_values (selective collection may leave them out).
  static std::vector<const Object*> returned_tensors(const Record& post);
  // The verdict shared by inference, the offline and the online check: the call returned at least one
  // tensor and every returned tensor has `attr` equal to `expected`.
  static bool outputs_match(const Record& post, std::string_view attr, const Value& expected);
};

// The online form of ConsistentOutputRelation::check (how it works: consistent_output_online.cpp).
class ConsistentOutputOnlineCheck final : public OnlineCheck {
 public:
  explicit ConsistentOutputOnlineCheck(const Invariant& invariant);
  void on_record(const Record& record, std::vector<OnlineViolation>& violations) override;
  bool triggered() const override { return triggered_; }
  // The API's records.
  OnlineInterest interest() const override;
  // Calls whose pre-record passed the precondition and whose post has not come yet.
  size_t open_calls() const { return open_.size(); }

 private:
  bool valid_ = false;
  bool triggered_ = false;
  std::string function_, attr_;
  Value expected_;
  std::optional<PreconditionGroup> precondition_;
  std::unordered_map<std::string, Record> open_;  // func_call_id -> pre-record
};

}  // namespace traincheck
