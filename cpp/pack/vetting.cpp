#include "pack/vetting.h"

#include "trace/key_table.h"

namespace traincheck {

const char* vet_verdict_name(VetVerdict v) {
  switch (v) {
    case VetVerdict::Kept: return "kept";
    case VetVerdict::DeviceBound: return "fixes the device";
    case VetVerdict::Violated: return "violated on a correct program";
    case VetVerdict::TooFewPrograms: return "triggered on too few programs";
    case VetVerdict::OneFamily: return "triggered in too few families";
    case VetVerdict::NotChecked: return "not checked";
  }
  return "?";
}

std::vector<const Invariant*> VetResult::kept() const {
  std::vector<const Invariant*> out;
  for (const VetDecision& d : decisions)
    if (d.verdict == VetVerdict::Kept) out.push_back(d.invariant);
  return out;
}

std::vector<Invariant> VetResult::pack() const {
  std::vector<Invariant> out;
  for (const VetDecision& d : decisions)
    if (d.verdict == VetVerdict::Kept) {
      out.push_back(*d.invariant);
      out.back().held_on_programs = static_cast<int64_t>(d.passed_on.size());
    }
  return out;
}

namespace {

bool is_device_attribute(std::string_view attr) {
  for (std::string_view a : {"is_cuda", "is_cpu", "is_mps", "is_xpu", "is_meta", "device", "is_ipu", "is_xla"})
    if (attr == a) return true;
  return false;
}

// An argument named `device`, or a value recorded with the type torch.device, anywhere in `v`.
bool names_a_device(const Value& v) {
  if (v.is_array()) {
    for (const Value& e : v.as_array())
      if (names_a_device(e)) return true;
  } else if (v.is_object()) {
    for (const Member& m : v.as_object()) {
      const std::string_view k = key_name(m.key);
      if (k == "device" || k == "torch.device" || names_a_device(m.value)) return true;
    }
  }
  return false;
}

}  // namespace

bool is_device_bound(const Invariant& invariant) {
  for (const Param& p : invariant.params) {
    const bool holds_value = p.const_value || p.pre_value || p.post_value;
    if ((p.type == ParamType::VarType || p.type == ParamType::VarName) && holds_value && is_device_attribute(p.attr_name))
      return true;
    if (p.type == ParamType::Api && p.arguments && names_a_device(*p.arguments)) return true;
  }
  return false;
}

namespace {

// Judges one identity on the programs `include` admits.
template <typename Include>
VetDecision judge(const Invariant& inv, const std::string& identity, const std::vector<VetProgram>& programs,
                  const VetRule& rule, Include&& include) {
  VetDecision d;
  d.invariant = &inv;
  bool missing = false;
  for (size_t i = 0; i < programs.size(); ++i) {
    if (!include(i)) continue;
    const VetProgram& p = programs[i];
    d.learned_by += p.learned.count(identity);
    auto it = p.outcomes.find(identity);
    if (it == p.outcomes.end()) {
      missing = true;
      continue;
    }
    if (it->second == CheckOutcome::Violated) d.violated_on.push_back(p.name);
    if (it->second == CheckOutcome::Passed) {
      d.passed_on.push_back(p.name);
      d.families_passed.insert(p.family);
    }
  }
  if (is_device_bound(inv)) d.verdict = VetVerdict::DeviceBound;
  else if (missing) d.verdict = VetVerdict::NotChecked;
  else if (!d.violated_on.empty()) d.verdict = VetVerdict::Violated;
  else if (d.passed_on.size() < rule.min_programs) d.verdict = VetVerdict::TooFewPrograms;
  else if (d.families_passed.size() < rule.min_families) d.verdict = VetVerdict::OneFamily;
  else d.verdict = VetVerdict::Kept;
  return d;
}

}  // namespace

VetResult vet(const std::vector<Invariant>& candidates, const std::vector<VetProgram>& programs, const VetRule& rule) {
  VetResult result;
  result.decisions.reserve(candidates.size());
  for (const Invariant& inv : candidates) {
    VetDecision d = judge(inv, inv.identity(), programs, rule, [](size_t) { return true; });
    RelationTally& t = result.by_relation[inv.relation];
    ++t.candidates;
    switch (d.verdict) {
      case VetVerdict::Kept: ++t.kept; break;
      case VetVerdict::DeviceBound: ++t.device_bound; break;
      case VetVerdict::Violated: ++t.violated; break;
      case VetVerdict::TooFewPrograms: ++t.too_few_programs; break;
      case VetVerdict::OneFamily: ++t.one_family; break;
      case VetVerdict::NotChecked: ++t.not_checked; break;
    }
    result.decisions.push_back(std::move(d));
  }
  return result;
}

std::vector<std::string> leave_one_out(const std::vector<Invariant>& candidates, const std::vector<VetProgram>& programs,
                                       size_t left_out, const VetRule& rule) {
  std::vector<std::string> violated;
  const VetProgram& out = programs.at(left_out);
  for (const Invariant& inv : candidates) {
    const std::string identity = inv.identity();
    bool learned_elsewhere = false;
    for (size_t i = 0; i < programs.size() && !learned_elsewhere; ++i)
      learned_elsewhere = i != left_out && programs[i].learned.count(identity) > 0;
    if (!learned_elsewhere) continue;
    const VetDecision d = judge(inv, identity, programs, rule, [&](size_t i) { return i != left_out; });
    if (d.verdict != VetVerdict::Kept) continue;
    auto it = out.outcomes.find(identity);
    if (it != out.outcomes.end() && it->second == CheckOutcome::Violated) violated.push_back(identity);
  }
  return violated;
}

}  // namespace traincheck
