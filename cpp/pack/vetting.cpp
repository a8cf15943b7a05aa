#include "pack/vetting.h"

namespace traincheck {

const char* vet_verdict_name(VetVerdict v) {
  switch (v) {
    case VetVerdict::Kept: return "kept";
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
  if (missing) d.verdict = VetVerdict::NotChecked;
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
