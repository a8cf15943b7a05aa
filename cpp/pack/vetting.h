// Vetting candidate invariants into a pack (issue 26, docs/relations.md §The shipped pack): an invariant
// is kept only when it generalises across the corpus of correct programs:
//   (a) no program violates it (a correct program that breaks it shows it is not a rule of training);
//   (b) it was triggered (its precondition held, and it passed) on at least `min_programs` programs
//       from at least `min_families` model families;
// and, before both, (d) it says nothing about the device tensors or calls are on (`is_cuda is false`,
// `tensor(device="cpu")`): the corpus runs on the CPU only, so it cannot tell a device constant from a rule,
// and such an invariant would alarm on every GPU program (`is_device_bound`);
// rule (c), leaving one program out of the learning keeps that program clean, is measured by
// `leave_one_out` rather than enforced: it follows from (a) for every invariant some other program
// learned, and the count of exceptions is reported.
//
// Inputs are per program: the identities it learned (its own inference) and what checking every
// candidate on its trace said. Pure set logic; reading and writing files is vet_command.cpp's.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "invariant/invariant.h"
#include "pack/check_outcomes.h"

namespace traincheck {

struct VetRule {
  size_t min_programs = 3;
  size_t min_families = 2;
};

struct VetProgram {
  std::string name, family;
  std::set<std::string> learned;  // identities its own inference produced
  OutcomesByIdentity outcomes;     // every candidate checked on its trace
};

enum class VetVerdict { Kept, DeviceBound, Violated, TooFewPrograms, OneFamily, NotChecked };
const char* vet_verdict_name(VetVerdict v);

// Whether the invariant fixes a device: a tensor attribute naming the device (is_cuda, is_cpu, device, ...)
// held to a value, or an API argument that is a device (`device=...`, a torch.device value).
bool is_device_bound(const Invariant& invariant);

struct VetDecision {
  const Invariant* invariant = nullptr;
  VetVerdict verdict = VetVerdict::NotChecked;
  std::vector<std::string> passed_on, violated_on;  // program names
  std::set<std::string> families_passed;
  size_t learned_by = 0;  // programs whose own inference produced it
};

struct RelationTally {
  size_t candidates = 0, kept = 0, device_bound = 0, violated = 0, too_few_programs = 0, one_family = 0, not_checked = 0;
};

struct VetResult {
  std::vector<VetDecision> decisions;               // one per candidate, in candidate order
  std::map<std::string, RelationTally> by_relation;  // relation name -> counts
  std::vector<const Invariant*> kept() const;
  // The kept invariants as the pack writes them: each with held_on_programs, the programs it passed on
  // (why a user may trust a violation of it).
  std::vector<Invariant> pack() const;
};

// `candidates` must outlive the result. A candidate missing from some program's outcomes is
// NotChecked (the check and the candidate set disagree: a build error the command reports).
VetResult vet(const std::vector<Invariant>& candidates, const std::vector<VetProgram>& programs, const VetRule& rule);

// Rule (c) for program `left_out`: the pack learned and vetted without it (candidates some other
// program learned, judged on the other programs only); returns the identities of that pack that
// `left_out` violates (empty: it checks clean).
std::vector<std::string> leave_one_out(const std::vector<Invariant>& candidates, const std::vector<VetProgram>& programs,
                                       size_t left_out, const VetRule& rule);

}  // namespace traincheck
