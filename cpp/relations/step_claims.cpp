#include "relations/step_claims.h"

#include <map>

#include "relations/replay_check.h"
#include "trace/var_state.h"

namespace traincheck {

namespace {

// The claims of one trace, per var type: (records claiming true, records claiming false).
using Claims = std::map<std::string_view, std::pair<std::vector<uint32_t>, std::vector<uint32_t>>>;

Claims claims_of(const StepClaimRelation& relation, const TraceStore& trace, std::string_view only_type = {}) {
  Claims out;
  const std::vector<Record>& records = trace.records();
  for (uint32_t i = 0; i < records.size(); ++i) {
    const Record& r = records[i];
    if (r.type != RecordType::StateChange || (!only_type.empty() && r.var_type != only_type)) continue;
    const std::optional<bool> claim = relation.claim_of(r);
    if (!claim) continue;
    auto& [holds, fails] = out[r.var_type.view()];
    (*claim ? holds : fails).push_back(i);
  }
  return out;
}

void add_examples(const TraceStore& trace, const std::vector<uint32_t>& records, std::vector<Example>& into) {
  for (uint32_t i : records) into.push_back(Example{&trace, {{i}}});
}

}  // namespace

StepClaimRelation::StepClaimRelation(const StepClaimWording& claim)
    : claim_(claim), key_(intern_key(std::string(kAttributeFieldPrefix) + std::string(claim.attribute))) {}

std::optional<bool> StepClaimRelation::claim_of(const Record& state) const {
  const Value* v = state.get(key_);
  if (v == nullptr || !v->is_bool()) return std::nullopt;
  return v->as_bool();
}

const std::string* StepClaimRelation::var_type_of(const Invariant& inv) const {
  if (inv.relation != claim_.relation || inv.params.size() != 1 || inv.params[0].type != ParamType::VarType ||
      inv.params[0].attr_name != claim_.attribute)
    return nullptr;
  return &inv.params[0].var_type.str();
}

std::vector<Hypothesis> StepClaimRelation::generate(const TraceStore& trace) const {
  std::vector<Hypothesis> out;
  for (const auto& [var_type, claims] : claims_of(*this, trace)) {
    const auto& [holds, fails] = claims;
    if (holds.empty()) continue;
    Hypothesis h;
    h.invariant.relation = std::string(claim_.relation);
    h.invariant.params = {Param::var_type_param(var_type, claim_.attribute)};
    h.group_names = {std::string(kGroup)};
    h.invariant.text_description = SharedText() + Name(var_type) + claim_.text;
    add_examples(trace, holds, h.positives);
    add_examples(trace, fails, h.negatives);
    out.push_back(std::move(h));
  }
  return out;
}

void StepClaimRelation::collect_examples(const TraceStore& trace, Hypothesis& h) const {
  const std::string* var_type = var_type_of(h.invariant);
  if (var_type == nullptr) return;
  for (const auto& [type, claims] : claims_of(*this, trace, *var_type)) {
    add_examples(trace, claims.first, h.positives);
    add_examples(trace, claims.second, h.negatives);
  }
}

CheckResult StepClaimRelation::check(const TraceStore& trace, const Invariant& inv, const CheckOptions& options) const {
  std::unique_ptr<OnlineCheck> check = make_online_check(inv);
  return replay_check(trace, inv, *check, options);
}

std::unique_ptr<OnlineCheck> StepClaimRelation::make_online_check(const Invariant& inv, const ApiSignatures*) const {
  const std::string* var_type = var_type_of(inv);
  std::optional<PreconditionGroup> precondition;
  if (const PreconditionGroup* g = inv.precondition_group(kGroup)) precondition = *g;
  return std::make_unique<StepClaimOnlineCheck>(*this, var_type ? *var_type : std::string(), std::move(precondition));
}

std::string StepClaimRelation::display_name(const Invariant& inv) const {
  const std::string* var_type = var_type_of(inv);
  if (var_type == nullptr) return {};
  return short_type_name(*var_type) + std::string(claim_.display);
}

StepClaimOnlineCheck::StepClaimOnlineCheck(const StepClaimRelation& relation, std::string var_type,
                                           std::optional<PreconditionGroup> precondition)
    : relation_(relation), var_type_(std::move(var_type)), var_type_name_(var_type_), precondition_(std::move(precondition)) {}

OnlineInterest StepClaimOnlineCheck::interest() const {
  OnlineInterest i;
  i.all_records = false;
  if (!var_type_.empty()) i.var_types = {var_type_};
  return i;
}

void StepClaimOnlineCheck::on_record(const Record& r, std::vector<OnlineViolation>& violations) {
  if (var_type_.empty() || r.type != RecordType::StateChange || r.var_type != var_type_name_) return;
  const std::optional<bool> claim = relation_.claim_of(r);
  if (!claim || (precondition_ && !precondition_->holds_on(r))) return;
  triggered_ = true;
  if (*claim || (r.process_id == violated_process_ && r.time == violated_time_)) return;
  violated_process_ = r.process_id;
  violated_time_ = r.time;
  violations.push_back(OnlineViolation{{r}});
}

}  // namespace traincheck
