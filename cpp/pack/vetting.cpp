#include "pack/vetting.h"

#include <algorithm>
#include <stdexcept>

#include "trace/key_table.h"

namespace traincheck {

const char* vet_verdict_name(VetVerdict v) {
  switch (v) {
    case VetVerdict::Kept: return "kept";
    case VetVerdict::DeviceBound: return "fixes the device";
    case VetVerdict::StepBound: return "fixes the step number";
    case VetVerdict::Violated: return "violated on a correct program";
    case VetVerdict::TooFewPrograms: return "triggered on too few programs";
    case VetVerdict::OneFamily: return "triggered in too few families";
    case VetVerdict::SeenOncePerRun: return "its evidence is a call made once per run";
    case VetVerdict::ClassDoesNotGeneralise: return "its class does not generalise";
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

// An API of an accelerator's module, or the queue where those modules defer their work until the device
// is initialised: on the corpus's CPU-only machine each runs its no-device path (`manual_seed_all` queues
// the seed), which a GPU program's initialised device does not take.
bool is_accelerator_api(std::string_view name) {
  for (std::string_view module : {"torch.cuda.", "torch.xpu.", "torch.mtia.", "torch.mps.", "torch.accelerator.",
                                  "torch._utils._LazySeedTracker."})
    if (name.starts_with(module)) return true;
  return false;
}

}  // namespace

bool is_device_bound(const Invariant& invariant) {
  for (const Param& p : invariant.params) {
    const bool holds_value = p.const_value || p.pre_value || p.post_value;
    if ((p.type == ParamType::VarType || p.type == ParamType::VarName) && holds_value && is_device_attribute(p.attr_name))
      return true;
    if (p.type == ParamType::Api && p.arguments && names_a_device(*p.arguments)) return true;
    if (p.type == ParamType::Api && is_accelerator_api(p.api_full_name)) return true;
  }
  return false;
}

bool is_step_bound(const Invariant& invariant) {
  if (!invariant.precondition) return false;
  for (const auto& [name, group] : invariant.precondition->groups)
    for (const Conjunction& conjunction : group.disjuncts)
      for (const Clause& clause : conjunction.clauses)
        if (clause.type == ClauseType::Constant && clause.prop_name == "meta_vars.step") return true;
  return false;
}

std::vector<std::string> repeated_evidence_apis(const Invariant& invariant) {
  std::vector<std::string> out;
  const std::vector<std::string> apis = named_apis(invariant);
  if (apis.size() == 2 && invariant.relation == "FunctionLeadRelation") out.push_back(apis[0]);
  if (apis.size() == 2 && invariant.relation == "FunctionCoverRelation") out.push_back(apis[1]);
  for (const Param& p : invariant.params)
    if (p.type == ParamType::Api && p.arguments && !p.arguments->is_null()) out.push_back(p.api_full_name);
  return out;
}

std::string hypothesis_class(const Invariant& invariant) {
  for (const Param& p : invariant.params)
    if (p.type == ParamType::Api && p.arguments && !p.arguments->is_null()) return invariant.relation + " with argument values";
  return invariant.relation;
}

namespace {

// Every candidate's outcome on every program, looked up once: judging a candidate without one program (rule
// (c)) is then a walk over an array, not a map search per program.
enum class Cell : unsigned char { Missing, NotTriggered, Passed, Violated };

struct OutcomeTable {
  std::vector<std::vector<Cell>> cells;     // [candidate][program]
  std::vector<std::vector<bool>> learned;   // [candidate][program]

  OutcomeTable(const std::vector<Invariant>& candidates, const std::vector<VetProgram>& programs) {
    cells.resize(candidates.size());
    learned.resize(candidates.size());
    for (size_t c = 0; c < candidates.size(); ++c) {
      const std::string identity = candidates[c].identity();
      for (const VetProgram& p : programs) {
        auto it = p.outcomes.find(identity);
        cells[c].push_back(it == p.outcomes.end()       ? Cell::Missing
                           : it->second == CheckOutcome::Passed   ? Cell::Passed
                           : it->second == CheckOutcome::Violated ? Cell::Violated
                                                                  : Cell::NotTriggered);
        learned[c].push_back(p.learned.count(identity) > 0);
      }
    }
  }
};

// Rule (g): an API its evidence needs repeated was called at most once per thread in every program it
// passed on, of the programs whose repeated calls are known (none known: the rule does not apply).
bool seen_once_per_run(const Invariant& inv, const std::vector<VetProgram>& programs, const std::vector<std::string>& passed_on) {
  for (const std::string& api : repeated_evidence_apis(inv)) {
    bool known = false, repeated = false;
    for (const VetProgram& p : programs) {
      if (!p.repeated_calls || std::find(passed_on.begin(), passed_on.end(), p.name) == passed_on.end()) continue;
      known = true;
      repeated = repeated || p.repeated_calls->count(api) > 0;
    }
    if (known && !repeated) return true;
  }
  return false;
}

// Judges candidate `c` on every program but `left_out` (npos: on all).
VetDecision judge(const Invariant& inv, size_t c, const OutcomeTable& table, const std::vector<VetProgram>& programs,
                  const VetRule& rule, size_t left_out = std::string::npos) {
  VetDecision d;
  d.invariant = &inv;
  bool missing = false;
  for (size_t i = 0; i < programs.size(); ++i) {
    if (i == left_out) continue;
    d.learned_by += table.learned[c][i];
    switch (table.cells[c][i]) {
      case Cell::Missing: missing = true; break;
      case Cell::Violated: d.violated_on.push_back(programs[i].name); break;
      case Cell::Passed:
        d.passed_on.push_back(programs[i].name);
        d.families_passed.insert(programs[i].family);
        break;
      case Cell::NotTriggered: break;
    }
  }
  if (is_device_bound(inv)) d.verdict = VetVerdict::DeviceBound;
  else if (is_step_bound(inv)) d.verdict = VetVerdict::StepBound;
  else if (missing) d.verdict = VetVerdict::NotChecked;
  else if (!d.violated_on.empty()) d.verdict = VetVerdict::Violated;
  else if (d.passed_on.size() < rule.min_programs) d.verdict = VetVerdict::TooFewPrograms;
  else if (d.families_passed.size() < rule.min_families) d.verdict = VetVerdict::OneFamily;
  else if (seen_once_per_run(inv, programs, d.passed_on)) d.verdict = VetVerdict::SeenOncePerRun;
  else d.verdict = VetVerdict::Kept;
  return d;
}

// Rule (c) for program `left_out`: candidates some other program learned, kept when judged on the other
// programs, that `left_out` violates.
LeaveOneOut leave_one_out(const std::vector<Invariant>& candidates, const OutcomeTable& table,
                          const std::vector<VetProgram>& programs, size_t left_out, const VetRule& rule) {
  LeaveOneOut loo{programs[left_out].name, {}};
  for (size_t c = 0; c < candidates.size(); ++c) {
    if (table.cells[c][left_out] != Cell::Violated) continue;
    bool learned_elsewhere = false;
    for (size_t i = 0; i < programs.size() && !learned_elsewhere; ++i)
      learned_elsewhere = i != left_out && table.learned[c][i];
    if (learned_elsewhere && judge(candidates[c], c, table, programs, rule, left_out).verdict == VetVerdict::Kept)
      loo.violated.push_back(&candidates[c]);
  }
  return loo;
}

void count(ClassTally& t, VetVerdict v) {
  switch (v) {
    case VetVerdict::Kept: ++t.kept; break;
    case VetVerdict::DeviceBound: ++t.device_bound; break;
    case VetVerdict::StepBound: ++t.step_bound; break;
    case VetVerdict::Violated: ++t.violated; break;
    case VetVerdict::TooFewPrograms: ++t.too_few_programs; break;
    case VetVerdict::OneFamily: ++t.one_family; break;
    case VetVerdict::SeenOncePerRun: ++t.seen_once_per_run; break;
    case VetVerdict::ClassDoesNotGeneralise: ++t.class_excluded; break;
    case VetVerdict::NotChecked: ++t.not_checked; break;
  }
}

}  // namespace

std::vector<const Invariant*> VetResult::shipped_leave_one_out(size_t program) const {
  std::vector<const Invariant*> out;
  for (const Invariant* inv : leave_one_out.at(program).violated)
    if (by_class.at(hypothesis_class(*inv)).generalises) out.push_back(inv);
  return out;
}

VetResult vet(const std::vector<Invariant>& candidates, const std::vector<VetProgram>& programs, const VetRule& rule) {
  VetResult result;
  const OutcomeTable table(candidates, programs);
  result.decisions.reserve(candidates.size());
  for (size_t c = 0; c < candidates.size(); ++c)
    result.decisions.push_back(judge(candidates[c], c, table, programs, rule));
  for (size_t i = 0; i < programs.size(); ++i) {
    result.leave_one_out.push_back(leave_one_out(candidates, table, programs, i, rule));
    std::set<std::string> alarming;  // classes that alarm on program i left out
    for (const Invariant* inv : result.leave_one_out.back().violated) alarming.insert(hypothesis_class(*inv));
    for (const std::string& name : alarming) ++result.by_class[name].loo_programs_alarmed;
  }
  // (e): a class whose left-out programs alarm more often than allowed ships nothing.
  const double allowed = rule.max_relation_loo_share * static_cast<double>(programs.size());
  for (auto& [name, t] : result.by_class) t.generalises = static_cast<double>(t.loo_programs_alarmed) <= allowed;
  for (VetDecision& d : result.decisions) {
    ClassTally& t = result.by_class[hypothesis_class(*d.invariant)];
    ++t.candidates;
    if (d.verdict == VetVerdict::Kept && !t.generalises) d.verdict = VetVerdict::ClassDoesNotGeneralise;
    count(t, d.verdict);
  }
  return result;
}

PackExtension extend_pack(const std::vector<Invariant>& pack, const std::vector<VetProgram>& added) {
  PackExtension out;
  for (const Invariant& inv : pack) {
    const std::string identity = inv.identity();
    std::vector<std::string> violated_on;
    int64_t passed = 0;
    for (const VetProgram& p : added) {
      const auto it = p.outcomes.find(identity);
      if (it == p.outcomes.end())
        throw std::runtime_error("program '" + p.name + "' has no check result for '" + inv.text_description.str() +
                                 "' (checked with another pack?)");
      if (it->second == CheckOutcome::Violated) violated_on.push_back(p.name);
      passed += it->second == CheckOutcome::Passed;
    }
    if (!violated_on.empty()) {
      out.dropped.emplace_back(inv, std::move(violated_on));
      continue;
    }
    out.pack.push_back(inv);
    if (inv.held_on_programs) *out.pack.back().held_on_programs += passed;
  }
  return out;
}

}  // namespace traincheck
