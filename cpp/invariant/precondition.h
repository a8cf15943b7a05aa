// Preconditions (docs/formats.md §Preconditions): clauses over record fields, conjunctions, disjunctions with
// an `inverted` flag, and the per-group map an invariant carries.
//
// A clause is evaluated on an *example*: the list of records the relation looked at (for APIContain,
// the parent's pre-record), each optionally enriched with context-manager fields. RecordView is that
// enriched record without copying it.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/field_error.h"
#include "trace/record.h"
#include "trace/value.h"

namespace traincheck {

class TraceStore;

struct RecordView {
  const Record* record = nullptr;
  const std::vector<Field>* extra = nullptr;  // sorted by key; may be null

  const Value* get(KeyId key) const;
  // Every key present (record fields, then extra fields not shadowed), for clause discovery.
  template <typename F>
  void for_each_field(F&& f) const {
    record->for_each_field(f);
    if (extra)
      for (const Field& fld : *extra)
        if (record->get(fld.key) == nullptr) f(fld);
  }
};

// Views of `records` of `trace`, enriched with the context managers active at the earliest record's
// time on its thread (what the original injects: docs/analysis.md §Precondition learning, step 3). `storage`
// keeps the extra fields.
std::vector<RecordView> make_enriched_views(const TraceStore& trace, std::span<const uint32_t> records,
                                            std::vector<Field>& storage);

enum class ClauseType { Constant, Consistent, Unequal, Exist };
std::string_view clause_type_name(ClauseType t);

struct Clause {
  ClauseType type = ClauseType::Constant;
  std::string prop_name;
  KeyId prop_key = kNoKey;            // intern_key(prop_name)
  Value additional_path;              // null when absent (written as the string "None"), else a list
  std::string prop_dtype = "None";    // a Python type name, mapped by name and never evaluated
  std::vector<Value> values;          // Constant only

  static Clause make(ClauseType type, std::string prop_name, std::string prop_dtype,
                     std::vector<Value> values = {}, Value additional_path = Value());

  // The property of one record (following additional_path); nullptr when absent.
  const Value* lookup(const RecordView& r) const;
  bool holds(std::span<const RecordView> example) const;

  Value to_value() const;
  std::string key() const;  // canonical JSON; equality of clauses
};

// AND of clauses; `unconditional` is the original's "Unconditional" (always true). An empty clause
// list is also true.
struct Conjunction {
  bool unconditional = false;
  std::vector<Clause> clauses;
  bool holds(std::span<const RecordView> example) const;
  Value to_value() const;
};

// OR of conjunctions (empty: false), negated as a whole when `inverted`.
struct PreconditionGroup {
  bool inverted = false;
  std::vector<Conjunction> disjuncts;
  bool holds(std::span<const RecordView> example) const;
  // On plain records, no extra fields: how the online checks evaluate it (their records already carry
  // the live context managers), and the offline ones on a trace without context managers.
  bool holds_on(const Record& record) const;
  bool holds_on(const Record& first, const Record& second) const;
  Value to_value() const;
  static PreconditionGroup unconditional();
};

// The group of relations judged on one call (ConsistentOutput, ConsistentInputOutput, Threshold): its
// clauses are evaluated on the call's pre-record. A file-format name (docs/formats.md §Group names).
inline constexpr std::string_view kPreEventGroup = "pre_event";

struct GroupedPreconditions {
  std::vector<std::pair<std::string, PreconditionGroup>> groups;
  const PreconditionGroup* find(std::string_view group) const;
  Value to_value() const;
};

class PreconditionFormatError : public FieldError {
 public:
  using FieldError::FieldError;
};
// Throw PreconditionFormatError naming the field (relative to "precondition").
Clause clause_from_value(const Value& v);
GroupedPreconditions preconditions_from_value(const Value& v);

// The stage names the original knows (config.ALL_STAGE_NAMES), sorted.
const std::vector<std::string>& all_stage_names();

// Stage injection (docs/formats.md §Stage restriction): restrict `group` to `valid_stages` via a constant
// meta_vars.stage clause: added to every conjunction (replacing Unconditional), or, for an inverted group,
// appended as an extra disjunct listing the invalid stages.
void add_stage_info(PreconditionGroup& group, const std::vector<std::string>& valid_stages);

}  // namespace traincheck
